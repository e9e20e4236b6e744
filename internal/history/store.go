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
	"os"
	"strconv"
	"syscall"
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
	db        *sql.DB // the poll loop's: the only writer
	ro        *sql.DB // the API's, read-only: a flood of requests never queues a poll's write
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
CREATE TABLE IF NOT EXISTS job_gpus (
	job_id      TEXT NOT NULL,
	gpu         INTEGER NOT NULL,
	alloc_bytes INTEGER NOT NULL,
	peak_bytes  INTEGER NOT NULL,
	sum_bytes   REAL NOT NULL,
	samples     INTEGER NOT NULL,
	PRIMARY KEY (job_id, gpu)
) WITHOUT ROWID;
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
	if err := private(path); err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
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
	// One writing connection: the daemon is the only writer, which avoids SQLITE_BUSY
	// between writers entirely.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	if err := addColumns(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	// The API reads through connections of its own, opened read-only: in WAL mode they
	// never wait for the writer nor make it wait, and cannot change the file.
	ro, err := openRO(path, 2)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Store{db: db, ro: ro, opts: opts, gpus: map[string]string{}}, nil
}

// private creates the database file, or narrows an existing one and its WAL and
// shared-memory files, to mode 0600: job ids, sizes and times are not every local
// user's to read. SQLite creates the -wal and -shm files with the database's mode. The
// open never blocks: a FIFO or a device at path is refused, not waited on.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

// OpenReadOnly opens an existing database for reading only, as gpumemctl reads the
// history a node's gpumemd recorded: it never creates, migrates or changes the file, so
// it is safe beside the gpumemd that writes it. Only the query methods work on it.
func OpenReadOnly(path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	ro, err := openRO(path, 1)
	if err != nil {
		return nil, err
	}
	// A file that is not a gpumemd history (or not SQLite) fails here, not mid-query.
	if _, err := ro.Exec(`SELECT ` + jobCols + ` FROM jobs LIMIT 0`); err != nil {
		ro.Close()
		return nil, fmt.Errorf("history %s: not a gpumemd history database: %w", path, err)
	}
	return &Store{ro: ro}, nil
}

// openRO opens read-only connections to path, at most conns of them.
func openRO(path string, conns int) (*sql.DB, error) {
	r := url.Values{}
	r.Add("mode", "ro")
	r.Add("_busy_timeout", "5000")
	r.Add("_query_only", "1")
	ro, err := sql.Open("sqlite3", "file:"+path+"?"+r.Encode())
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	ro.SetMaxOpenConns(conns)
	return ro, nil
}

// Close closes the database.
func (s *Store) Close() error {
	rerr := s.ro.Close()
	if s.db == nil {
		return rerr
	}
	if err := s.db.Close(); err != nil {
		return err
	}
	return rerr
}

// IntegrityCheck runs SQLite's own check and returns its verdict ("ok" when sound).
func (s *Store) IntegrityCheck() (string, error) {
	var r string
	db := s.db
	if db == nil {
		db = s.ro
	}
	err := db.QueryRow("PRAGMA integrity_check").Scan(&r)
	return r, err
}

// addedCols are the jobs table's columns added after the first release, each with the
// value a job already held gets: from Slurm's record of the job (its user, account,
// partition and name), empty; what its end-of-job summary needs (time over its slice,
// warnings, kills) zero; and the summary's state, summaryOld for a job that ended
// before summaries existed, so an upgrade does not write into months-old jobs.
var addedCols = []struct{ name, decl, old string }{
	{"user", "TEXT NOT NULL DEFAULT ''", ""},
	{"account", "TEXT NOT NULL DEFAULT ''", ""},
	{"partition", "TEXT NOT NULL DEFAULT ''", ""},
	{"name", "TEXT NOT NULL DEFAULT ''", ""},
	{"over_seconds", "INTEGER NOT NULL DEFAULT 0", ""},
	{"warnings", "INTEGER NOT NULL DEFAULT 0", ""},
	{"kills", "INTEGER NOT NULL DEFAULT 0", ""},
	{"summary", "INTEGER NOT NULL DEFAULT 0", "summary = " + strconv.Itoa(summaryOld) + " WHERE running = 0"},
	{"summary_tries", "INTEGER NOT NULL DEFAULT 0", ""},
	{"summary_after", "INTEGER NOT NULL DEFAULT 0", ""},
}

func addColumns(db *sql.DB) error {
	rows, err := db.Query(`SELECT name FROM pragma_table_info('jobs')`)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return err
		}
		have[c] = true
	}
	rows.Close()
	for _, c := range addedCols {
		if have[c.name] {
			continue
		}
		if _, err := db.Exec(`ALTER TABLE jobs ADD COLUMN ` + c.name + ` ` + c.decl); err != nil {
			return err
		}
		if c.old != "" {
			if _, err := db.Exec(`UPDATE jobs SET ` + c.old); err != nil {
				return err
			}
		}
	}
	return nil
}
