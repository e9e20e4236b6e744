package clip

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	if got := String("n[1-4]", 80); got != "n[1-4]" {
		t.Errorf("a short string changed: %q", got)
	}
	long := strings.Repeat("x", 1<<20)
	got := String(long, Line)
	if len(got) > Line {
		t.Errorf("clipped to %d bytes, want at most %d", len(got), Line)
	}
	if !strings.HasPrefix(got, "xxxx") || !strings.HasSuffix(got, " more bytes)") || !strings.Contains(got, "…") {
		t.Errorf("clipped string %q...: want the head, an ellipsis and the count left out", got[:40])
	}
	left := len(long) - strings.Count(got, "x")
	if !strings.Contains(got, "("+strconv.Itoa(left)+" more bytes)") {
		t.Errorf("clipped string's tail %q: want it to count %d bytes left out", got[len(got)-30:], left)
	}
	if got := String(strings.Repeat("é", 100), 15); !utf8.ValidString(got) || len(got) > 15 {
		t.Errorf("cut inside a character or over the bound: %q", got)
	}
	if got := String("abcdef", 3); got != "abc" {
		t.Errorf("a bound too small for the note: %q, want the head alone", got)
	}
}

func FuzzString(f *testing.F) {
	f.Add("n[1-1000000]", 20)
	f.Add(strings.Repeat("é", 50), 33)
	f.Fuzz(func(t *testing.T, s string, max int) {
		got := String(s, max)
		if len(s) <= max && got != s {
			t.Fatalf("String(%q, %d) = %q, want it unchanged", s, max, got)
		}
		if len(s) > max && len(got) > max && max >= 0 {
			t.Fatalf("String(%q, %d) = %q: over the bound", s, max, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("String(%q, %d) = %q: cut inside a character", s, max, got)
		}
	})
}
