// Command gen writes THIRD_PARTY_NOTICES.md at the root of the gpumem module from the
// module cache: go run ./internal/licenses/gen (after adding or updating a dependency).
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
	path := filepath.Join(root, licenses.NoticeFile)
	if err := os.WriteFile(path, []byte(licenses.Render(cs)), 0o644); err != nil {
		fail(err)
	}
	fmt.Printf("wrote %s: %d components\n", path, len(cs))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "licenses/gen:", err)
	os.Exit(1)
}
