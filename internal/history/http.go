package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gpumem/gpumem/internal/history/api"
)

// Handler serves the history as JSON, each answer with its "version" (api.Version):
//
//	GET /api/jobs?since=UNIX&limit=N   jobs, most recent first (limit 1-10000, default 100)
//	GET /api/jobs/{id}                 one job with its samples
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/jobs", s.serveJobs)
	mux.HandleFunc("GET /api/jobs/{id}", s.serveJob)
	return mux
}

func (s *Store) serveJobs(w http.ResponseWriter, r *http.Request) {
	since, err := intParam(r, "since", 0, 0, 1<<62)
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	limit, err := intParam(r, "limit", 100, 1, 10000)
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	jobs, err := s.Jobs(since, int(limit))
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, api.JobList{Version: api.Version, Jobs: jobs})
}

func (s *Store) serveJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		httpError(w, http.StatusBadRequest, fmt.Errorf("job id %q: want a Slurm job number", id))
		return
	}
	j, samples, err := s.Job(id)
	if errors.Is(err, ErrNoJob) {
		httpError(w, http.StatusNotFound, err)
		return
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	writeJSON(w, api.JobDetail{Version: api.Version, Job: j, Samples: samples})
}

func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%q: want a whole number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(api.Error{Error: err.Error()})
}
