package version

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptVersions runs packaging/version.sh in a repository of its own, made commit
// by commit as gpumem's is, with no tag until the end: a clone without tags still has
// the release CHANGELOG.md's newest heading names, counted from the commit that cut it,
// and a tag, once made, wins.
func TestScriptVersions(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "packaging", "version.sh"))
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(t.TempDir(), "repo")
	env := append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	commit := func(msg string) string {
		t.Helper()
		git(repo, "add", "-A")
		git(repo, "commit", "-q", "-m", msg)
		return git(repo, "rev-parse", "--short=7", "HEAD")
	}
	// version runs the script of the repository at dir: its version, --deb, --ldflags.
	version := func(dir string) (string, string, string) {
		t.Helper()
		var outs []string
		for _, arg := range []string{"", "--deb", "--ldflags"} {
			cmd := exec.Command("sh", filepath.Join(dir, "packaging", "version.sh"))
			if arg != "" {
				cmd.Args = append(cmd.Args, arg)
			}
			cmd.Env = append(env, "VERSION=")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("version.sh %s in %s: %v", arg, dir, err)
			}
			outs = append(outs, strings.TrimSpace(string(out)))
		}
		return outs[0], outs[1], outs[2]
	}
	check := func(what, dir, wantV, wantDeb string) {
		t.Helper()
		v, deb, ld := version(dir)
		if v != wantV || deb != wantDeb {
			t.Errorf("%s: version %q, --deb %q; want %q, %q", what, v, deb, wantV, wantDeb)
		}
		if !strings.Contains(ld, "internal/version.Version="+v+" ") {
			t.Errorf("%s: --ldflags %q do not stamp %q", what, ld, v)
		}
	}
	changelog := func(releases ...string) string {
		s := "# Changelog\n\nVersions are the `## [X.Y.Z] - DATE` headings below.\n\n## [Unreleased]\n\n"
		for _, r := range releases {
			s += "## [" + r + "]\n\n- something\n\n"
		}
		return s
	}

	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	write("packaging/version.sh", string(script))
	write("CHANGELOG.md", changelog())
	h := commit("start")
	check("no release heading", repo, "v0.0.0-1-g"+h, "0.0.0+git1.g"+h)

	write("CHANGELOG.md", changelog("0.0.0] - 2026-11-30"))
	h = commit("versioning")
	write("a", "1")
	h = commit("one after 0.0.0")
	check("one commit after 0.0.0", repo, "v0.0.0-1-g"+h, "0.0.0+git1.g"+h)

	write("CHANGELOG.md", changelog("0.1.0] - 2026-12-02", "0.0.0] - 2026-11-30"))
	h = commit("release 0.1.0")
	check("the commit that cuts 0.1.0", repo, "v0.1.0", "0.1.0")

	write("a", "2")
	commit("fix")
	write("CHANGELOG.md", strings.Replace(changelog("0.1.0] - 2026-12-02", "0.0.0] - 2026-11-30"), "## [Unreleased]\n", "## [Unreleased]\n\n- a fix\n", 1))
	h = commit("note the fix")
	check("two commits after 0.1.0", repo, "v0.1.0-2-g"+h, "0.1.0+git2.g"+h)

	clone := filepath.Join(t.TempDir(), "clone")
	git(repo, "clone", "-q", "--no-tags", repo, clone)
	check("a clone without tags", clone, "v0.1.0-2-g"+h, "0.1.0+git2.g"+h)

	shallow := filepath.Join(t.TempDir(), "shallow")
	git(repo, "clone", "-q", "--depth", "1", "file://"+repo, shallow)
	check("a shallow clone", shallow, "v0.1.0-0-g"+h, "0.1.0+git0.g"+h)

	write("a", "3")
	check("changes not committed", repo, "v0.1.0-2-g"+h+"-dirty", "0.1.0+git2.g"+h+".dirty")
	git(repo, "checkout", "-q", "a")

	git(repo, "tag", "v0.2.0")
	check("a tag", repo, "v0.2.0", "0.2.0")
	write("a", "4")
	h = commit("after the tag")
	check("a commit after the tag", repo, "v0.2.0-1-g"+h, "0.2.0+git1.g"+h)
}

// TestRepositoryVersion: gpumem's own tree, where no tag is reachable, is versioned by
// the newest release of its CHANGELOG.md, not 0.0.0.
func TestRepositoryVersion(t *testing.T) {
	top := filepath.Join("..", "..")
	if err := exec.Command("git", "-C", top, "rev-parse", "--git-dir").Run(); err != nil {
		t.Skip("not a git checkout")
	}
	if exec.Command("git", "-C", top, "describe", "--tags", "--match", "v[0-9]*").Run() == nil {
		t.Skip("a tag is reachable; it names the version")
	}
	b, err := os.ReadFile(filepath.Join(top, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rel string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "## ["); ok && !strings.HasPrefix(v, "Unreleased") {
			rel, _, _ = strings.Cut(v, "]")
			break
		}
	}
	if rel == "" {
		t.Fatal("CHANGELOG.md has no release heading")
	}
	cmd := exec.Command("sh", filepath.Join(top, "packaging", "version.sh"))
	cmd.Env = append(os.Environ(), "VERSION=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if v := strings.TrimSpace(string(out)); v != "v"+rel && !strings.HasPrefix(v, "v"+rel+"-") {
		t.Errorf("packaging/version.sh says %s; CHANGELOG.md's newest release is %s", v, rel)
	}
}
