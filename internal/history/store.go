// Package history keeps what each job used on this node, in SQLite, so an admin can
// ask after the job is gone: its slice, peak and mean GPU memory, GPUs, start and end,
// and samples downsampled to one per bucket (the bucket's maximum, so peaks survive)
// with bounded retention.
//
// The database runs in WAL mode with synchronous=NORMAL: a kill -9 or power loss can
// lose the last transaction, never the file's integrity.
package history

import (
	"database/sql"
	"fmt"
	"net/url"
	"time"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// Options bound what the store keeps.
type Options struct {
	Bucket      time.Duration // one sample per job per bucket; 1m when zero
	KeepSamples time.Duration // samples older than this are deleted; 7 days when zero
	KeepJobs    time.Duration // jobs that ended longer ago are deleted; 90 days when zero
}

// Store is an open history database.
type Store struct {
	db        *sql.DB
	opts      Options
	gpus      map[string]string // job -> GPU list, so a job's GPUs accumulate across polls
	lastPrune time.Time
}

const schema = `
CREATE TABLE IF NOT EXISTS jobs (
	job_id      TEXT PRIMARY KEY,
	kind        TEXT NOT NULL,
	alloc_bytes INTEGER NOT NULL,
	peak_bytes  INTEGER NOT NULL,
	sum_bytes   REAL NOT NULL,
	samples     INTEGER NOT NULL,
	gpus        TEXT NOT NULL,
	start_unix  INTEGER NOT NULL,
	end_unix    INTEGER NOT NULL,
	running     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_unix);
CREATE TABLE IF NOT EXISTS samples (
	job_id     TEXT NOT NULL,
	t_unix     INTEGER NOT NULL,
	used_bytes INTEGER NOT NULL,
	PRIMARY KEY (job_id, t_unix)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS samples_t ON samples(t_unix);
`

// Open opens (creating if needed) the database at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.Bucket <= 0 {
		opts.Bucket = time.Minute
	}
	if opts.KeepSamples <= 0 {
		opts.KeepSamples = 7 * 24 * time.Hour
	}
	if opts.KeepJobs <= 0 {
		opts.KeepJobs = 90 * 24 * time.Hour
	}
	q := url.Values{}
	q.Add("_journal_mode", "WAL")
	q.Add("_synchronous", "NORMAL")
	q.Add("_busy_timeout", "5000")
	q.Add("_foreign_keys", "1")
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	// One connection: the daemon is the only writer, and readers (the HTTP API) are
	// served between polls; this keeps memory small and avoids SQLITE_BUSY entirely.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	return &Store{db: db, opts: opts, gpus: map[string]string{}}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// IntegrityCheck runs SQLite's own check and returns its verdict ("ok" when sound).
func (s *Store) IntegrityCheck() (string, error) {
	var r string
	err := s.db.QueryRow("PRAGMA integrity_check").Scan(&r)
	return r, err
}
