// Command gen writes THIRD_PARTY_NOTICES.md and packaging/copyright (Debian's format)
// from the module cache: go run ./internal/licenses/gen, after adding or updating a
// dependency.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpumem/gpumem/internal/licenses"
)

func main() {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		fail(fmt.Errorf("go list -m: %w", err))
	}
	root := strings.TrimSpace(string(out))
	cs, err := licenses.Collect(root)
	if err != nil {
		fail(err)
	}
	if err := licenses.Check(cs); err != nil {
		fail(err)
	}
	deb, err := licenses.Debian(cs)
	if err != nil {
		fail(err)
	}
	for name, text := range map[string]string{licenses.NoticeFile: licenses.Render(cs), licenses.CopyrightFile: deb} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			fail(err)
		}
	}
	fmt.Printf("wrote %s and %s: %d components\n", licenses.NoticeFile, licenses.CopyrightFile, len(cs))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "licenses/gen:", err)
	os.Exit(1)
}
