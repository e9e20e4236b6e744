package jobsummary

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

// acct is accounting as a map of AdminComments, as sacctmgr writes them.
type acct struct {
	state, comment string
	down           bool
	lowercases     bool
	other          string // another node's token, written between our write and read
	writes         int
}

func (a *acct) Job(_ context.Context, raw string) (slurmcli.AcctJob, error) {
	if a.down {
		return slurmcli.AcctJob{}, errors.New("slurmdbd down")
	}
	return slurmcli.AcctJob{RawID: raw, ID: raw, State: a.state, Comment: a.comment}, nil
}

func (a *acct) SetAdminComment(_ context.Context, _ slurmcli.AcctJob, c string) error {
	a.writes++
	if a.lowercases {
		c = strings.ToLower(c)
	}
	a.comment = strings.ReplaceAll(strings.ReplaceAll(c, `"`, "`"), "'", "`")
	if a.other != "" {
		a.comment = a.other
	}
	return nil
}

func TestPutWritesOnlyWhatKeepsOthersText(t *testing.T) {
	tok, _ := Encode(sample())
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		a          acct
		lowercases bool
		want       Outcome
		comment    string
	}{
		{"empty", acct{state: "COMPLETED"}, false, Written, tok},
		{"an admin's note kept", acct{state: "CANCELLED by 0", comment: "Checked by Ana"}, false, Written, "Checked by Ana " + tok},
		{"still running", acct{state: "RUNNING"}, false, Later, ""},
		{"slurmdbd down", acct{down: true}, false, Later, ""},
		{"quotes", acct{state: "FAILED", comment: `it's "odd"`}, false, Never, `it's "odd"`},
		{"capitals on 22.05", acct{state: "COMPLETED", comment: "JS1:H4sI", lowercases: true}, true, Never, "JS1:H4sI"},
		{"lowercase on 22.05", acct{state: "COMPLETED", comment: "note", lowercases: true}, true, Written, "note " + tok},
		{"another writer", acct{state: "COMPLETED", other: "gpumem/1;node=n9;kind=gpu"}, false, Later, "gpumem/1;node=n9;kind=gpu"},
		{"already there", acct{state: "COMPLETED", comment: tok}, false, Written, tok},
	} {
		a := c.a
		got, err := Put(ctx, &a, "17", tok, c.lowercases)
		if got != c.want {
			t.Errorf("%s: outcome %d (%v), want %d", c.name, got, err, c.want)
		}
		if a.comment != c.comment {
			t.Errorf("%s: AdminComment %q, want %q", c.name, a.comment, c.comment)
		}
		if c.want == Never && a.writes > 0 {
			t.Errorf("%s: wrote although it must not", c.name)
		}
	}
}
