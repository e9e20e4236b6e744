package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMailProgAddsTheSummary runs packaging/gpumem-mail, the MailProg that adds gpumemctl
// used to Slurm's end-of-job mail, with a gpumemctl and a mailer that record what they
// were given.
func TestMailProgAddsTheSummary(t *testing.T) {
	script, _ := filepath.Abs("../../packaging/gpumem-mail")
	for _, c := range []struct {
		name, job, mailType, used string
		wait                      string
		wantBody                  []string
		wantNoBody                bool
	}{
		{name: "ended", job: "17", mailType: "Ended", used: "Job ID: 17\nGPU memory on n3: a whole GPU", wait: "5",
			wantBody: []string{"Job ID: 17", "GPU memory on n3"}},
		{name: "failed, no summary", job: "18", mailType: "Failed", used: "GPU memory: no gpumem summary", wait: "0",
			wantBody: []string{"no GPU memory summary within 0s", "gpumemctl used 18"}},
		{name: "began", job: "19", mailType: "Began", wantNoBody: true},
		{name: "a job id that is not a number", job: "1;touch x", mailType: "Ended", wantNoBody: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			record := filepath.Join(dir, "mail")
			write := func(name, body string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			write("gpumemctl", "printf '%s\\n' \""+strings.ReplaceAll(c.used, "\n", "\\n")+"\"\n")
			write("mailer", "{ printf 'args:'; printf ' [%s]' \"$@\"; echo; cat; } > "+record+".tmp; mv "+record+".tmp "+record+"\n")
			cmd := exec.Command("/bin/sh", script, "-s", "Slurm Job_id="+c.job+" Ended", "ana")
			cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "GPUMEM_MAILER=" + filepath.Join(dir, "mailer"),
				"GPUMEM_MAIL_WAIT=" + c.wait, "SLURM_JOB_ID=" + c.job, "SLURM_JOB_MAIL_TYPE=" + c.mailType}
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("MailProg held its caller %s", took)
			}
			var got []byte
			for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if b, err := os.ReadFile(record); err == nil {
					got = b
					break
				}
			}
			mail := string(got)
			if !strings.HasPrefix(mail, "args: [-s] [Slurm Job_id="+c.job+" Ended] [ana]\n") {
				t.Fatalf("the mailer was given %q", mail)
			}
			body := strings.TrimPrefix(mail, mail[:strings.Index(mail, "\n")+1])
			if c.wantNoBody && body != "" {
				t.Errorf("body %q, want none", body)
			}
			for _, w := range c.wantBody {
				if !strings.Contains(body, w) {
					t.Errorf("body %q lacks %q", body, w)
				}
			}
		})
	}
}
