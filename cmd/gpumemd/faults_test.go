package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/nvmlsrc"
	"github.com/gpumem/gpumem/internal/slurmcli/slurmtest"
)

// syncBuffer is a log another goroutine writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTakenPortIsRetried: a local user who binds gpumemd's port first does not stop it.
// gpumemd keeps its other duties (here: this node's inventory), logs the taken port,
// retries, and serves as soon as the port is free, with the failures in its metrics.
func TestTakenPortIsRetried(t *testing.T) {
	dir := t.TempDir()
	squatter, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer squatter.Close()
	addr := squatter.Addr().String()
	var logged syncBuffer
	ready, done := launch(t, &logged, "--config", "/dev/null", "--nvml", "fake:../../test/lab/nodes/n1.json", "--node", "n1",
		"--listen", addr, "--poll-interval", "100ms", "--history-db", "", "--health-state", "",
		"--write-inventory", "--inventory-dir", filepath.Join(dir, "inv"), "--scontrol", slurmtest.New(t, false).Scontrol)
	inventory := filepath.Join(dir, "inv", "n1.json")
	if !eventually(10*time.Second, func() bool {
		_, err := os.Stat(inventory)
		return err == nil
	}) {
		t.Fatal("no inventory written while the port was taken")
	}
	select {
	case err := <-done:
		t.Fatalf("gpumemd ended while its port was taken: %v", err)
	case a := <-ready:
		t.Fatalf("gpumemd says it listens on %s, which another process holds", a)
	default:
	}
	if !eventually(5*time.Second, func() bool {
		l := logged.String()
		return strings.Contains(l, "duty=listen") && strings.Contains(l, "address already in use")
	}) {
		t.Errorf("the taken port is not in the log:\n%s", logged.String())
	}
	squatter.Close()
	var got string
	select {
	case got = <-ready:
	case err := <-done:
		t.Fatalf("gpumemd ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("gpumemd did not listen within 60s of the port being freed")
	}
	if got != addr {
		t.Errorf("listens on %s, want %s", got, addr)
	}
	var m string
	if !eventually(5*time.Second, func() bool {
		m = scrape(t, "http://"+addr+"/metrics")
		return strings.Contains(m, `gpumem_sidecar_duty_up{duty="listen"} 1`)
	}) {
		t.Errorf("listen not up in the metrics:\n%s", m)
	}
	if strings.Contains(m, `gpumem_sidecar_duty_failures_total{duty="listen"} 0`) || !strings.Contains(m, `gpumem_sidecar_duty_failures_total{duty="listen"}`) {
		t.Errorf("the failed listens are not counted:\n%s", m)
	}
}

// TestDamagedHistoryIsSetAside: a history.db that is not a database (a torn write, a
// disk error) is renamed aside, never deleted; a new history is used and /api answers;
// the log and the metrics say so.
func TestDamagedHistoryIsSetAside(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	garbage := bytes.Repeat([]byte("torn page "), 10000)
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	var logged syncBuffer
	addr := startLogging(t, &logged, "--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t1", "--listen", "127.0.0.1:0",
		"--poll-interval", "100ms", "--history-db", db, "--health-state", "")
	aside, _ := filepath.Glob(db + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("set aside: %v, want one %s.corrupt-TIME", aside, db)
	}
	if b, _ := os.ReadFile(aside[0]); !bytes.Equal(b, garbage) {
		t.Errorf("%s does not hold the damaged file as it was", aside[0])
	}
	if code, b := get(t, "http://"+addr+"/api/jobs"); code != http.StatusOK {
		t.Errorf("/api/jobs on the new history: %d %s", code, b)
	}
	if !eventually(5*time.Second, func() bool {
		m := scrape(t, "http://"+addr+"/metrics")
		return strings.Contains(m, "gpumem_sidecar_history_set_aside_total 1") && strings.Contains(m, `gpumem_sidecar_duty_up{duty="history"} 1`)
	}) {
		t.Errorf("the set-aside history is not in the metrics:\n%s", scrape(t, "http://"+addr+"/metrics"))
	}
	if l := logged.String(); !strings.Contains(l, "the database was damaged") || !strings.Contains(l, aside[0]) {
		t.Errorf("the log does not say where the damaged history went:\n%s", l)
	}
}

// TestAPINeedsTLSOrAuthInForce: on a listener other than loopback, a web config file
// that sets neither TLS nor basic auth does not open /api (the history); one with
// basic auth does, for the users it names. /metrics answers either way.
func TestAPINeedsTLSOrAuthInForce(t *testing.T) {
	dir := t.TempDir()
	headersOnly := filepath.Join(dir, "headers.yml")
	os.WriteFile(headersOnly, []byte("http_server_config:\n  headers:\n    X-Frame-Options: deny\n"), 0o600)
	auth := filepath.Join(dir, "auth.yml")
	os.WriteFile(auth, []byte("basic_auth_users:\n  prom: $2a$04$5J03X8L0bXAb14TKGUlgu.0TnndGc2cAKTieOpo1kJ9Pam6jRqzt2\n"), 0o600)
	tlsOnly := filepath.Join(dir, "tls.yml")
	selfSigned(t, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	os.WriteFile(tlsOnly, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"), 0o600)
	for _, c := range []struct {
		web        string
		user, pass string
		code       int
	}{
		{headersOnly, "", "", http.StatusForbidden},
		{headersOnly, "prom", "anything", http.StatusForbidden},
		{auth, "", "", http.StatusUnauthorized},
		{auth, "prom", "s3cret", http.StatusOK},
		{tlsOnly, "", "", http.StatusOK},
	} {
		var logged syncBuffer
		addr := startLogging(t, &logged, "--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t3", "--listen", "0.0.0.0:0",
			"--history-db", filepath.Join(t.TempDir(), "h.db"), "--health-state", "", "--web.config.file", c.web)
		_, port, _ := net.SplitHostPort(addr)
		base, cl := "http://127.0.0.1:"+port, client
		if c.web == tlsOnly {
			base = "https://127.0.0.1:" + port
			cl = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		}
		req, _ := http.NewRequest("GET", base+"/api/jobs", nil)
		if c.user != "" {
			req.SetBasicAuth(c.user, c.pass)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("%s, user %q: /api/jobs %s %s; want %d", filepath.Base(c.web), c.user, resp.Status, b, c.code)
		}
		if c.code == http.StatusForbidden {
			why := "--web.config.file " + c.web + " sets neither"
			if !strings.Contains(string(b), why) || !strings.Contains(logged.String(), why) {
				t.Errorf("%s: the refusal and the log do not say why (%q):\n%s\n%s", filepath.Base(c.web), why, b, logged.String())
			}
			if code, _ := get(t, base+"/metrics"); code != http.StatusOK {
				t.Errorf("%s: /metrics %d", filepath.Base(c.web), code)
			}
		}
	}
}

// TestConfigThatIsNotAFileStopsAtOnce: a FIFO, a device or a huge file named as
// gpumem.conf is a clear error at start, not a daemon blocked reading it.
func TestConfigThatIsNotAFileStopsAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "gpumem.conf")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.conf")
	os.WriteFile(big, bytes.Repeat([]byte("# comment\n"), config.MaxFileBytes/10+1), 0o644)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct{ args []string }{
		{[]string{"--config", fifo}},
		{[]string{"--config", "/dev/zero"}},
		{[]string{"--config", big}},
		{[]string{"--config", "/dev/null", "--nvml", "mock:dgxh100", "--web.config.file", fifo}},
	} {
		done := make(chan error, 1)
		go func() { done <- run(context.Background(), c.args, log, nil) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.args[len(c.args)-1]) ||
				!strings.Contains(err.Error(), "not a regular file") && !strings.Contains(err.Error(), "allowed") {
				t.Errorf("gpumemd %v: %v; want an error naming the file and what is wrong with it", c.args, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("gpumemd %v still reading its config after 10s", c.args)
		}
	}
}

// TestDroppedWarningsAreExported: warnings to jobs that found the notify queue full
// are counted in the metrics, not only in the notifier.
func TestDroppedWarningsAreExported(t *testing.T) {
	src, err := nvmlsrc.Open("mock:dgxh100")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opt := options{Gpumemd: config.DefaultGpumemd(), Shared: config.Default()}
	opt.HistoryDB, opt.HealthState, opt.UsageNotify = "", "", true
	opt.Scontrol = slurmtest.New(t, false).Scontrol // never the machine's own Slurm
	d := newDaemon(opt, "t1", src, slog.New(slog.NewTextHandler(io.Discard, nil)))
	// Not started, the notifier has no queue: every warning is dropped.
	for range 3 {
		d.notifier.Tell("501", "over its slice")
	}
	d.poll(time.Now())
	want := "# HELP gpumem_sidecar_warnings_dropped_total Warnings to jobs (scontrol notify) dropped since start because the queue of warnings was full.\n" +
		"# TYPE gpumem_sidecar_warnings_dropped_total counter\ngpumem_sidecar_warnings_dropped_total 3\n"
	if err := testutil.CollectAndCompare(d.exporter, strings.NewReader(want), "gpumem_sidecar_warnings_dropped_total"); err != nil {
		t.Error(err)
	}
}

// TestMain doubles as gpumemd itself, for tests that need a process of its own (its
// signals, its stderr): with GPUMEMD_TEST_AS_MAIN=1 it runs main on its arguments.
func TestMain(m *testing.M) {
	if os.Getenv("GPUMEMD_TEST_AS_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// TestLogToAClosedPipe: gpumemd whose stderr is a pipe nobody reads any more (journald
// restarted, the terminal that started it closed) keeps running and serving; Go would
// otherwise end it with SIGPIPE on its first log line.
func TestLogToAClosedPipe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // before gpumemd writes its first line
	cmd := exec.Command(os.Args[0], "--config", "/dev/null", "--nvml", "mock:dgxh100", "--node", "t1", "--listen", addr,
		"--history-db", "", "--health-state", "")
	cmd.Env = append(os.Environ(), "GPUMEMD_TEST_AS_MAIN=1")
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var waitErr error
	exited := make(chan struct{}) // closed once waitErr is set
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			if waitErr != nil {
				t.Errorf("gpumemd after SIGTERM: %v", waitErr)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("gpumemd did not stop within 10s of SIGTERM")
		}
	}()
	if !eventually(10*time.Second, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		resp, err := client.Get("http://" + addr + "/metrics")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatal("gpumemd did not serve within 10s")
	}
	select {
	case <-exited:
		t.Fatalf("gpumemd ended with its stderr a closed pipe: %v", waitErr)
	default:
	}
}

// selfSigned writes a throwaway certificate for 127.0.0.1 and its key, as PEM.
func selfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpumemd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), 0o600)
}

// TestNVMLDownShowsAsADuty: NVML that cannot start shows as a duty down, beside the
// node's health, and as up once it starts.
func TestNVMLDownShowsAsADuty(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "node.json") // not there yet: NVML cannot start
	addr := start(t, "--config", "/dev/null", "--nvml", "fake:"+fake, "--node", "t1", "--listen", "127.0.0.1:0",
		"--poll-interval", "100ms", "--history-db", "", "--health-state", "", "--scontrol", slurmtest.New(t, false).Scontrol)
	has := func(series string) bool { return strings.Contains(scrape(t, "http://"+addr+"/metrics"), series) }
	if !eventually(5*time.Second, func() bool { return has(`gpumem_sidecar_duty_up{duty="nvml"} 0`) }) {
		t.Fatalf("NVML down is not a duty down:\n%s", scrape(t, "http://"+addr+"/metrics"))
	}
	node(t, fake, 1, 0, false)
	if !eventually(5*time.Second, func() bool { return has(`gpumem_sidecar_duty_up{duty="nvml"} 1`) }) {
		t.Errorf("NVML started but its duty is not up:\n%s", scrape(t, "http://"+addr+"/metrics"))
	}
}
