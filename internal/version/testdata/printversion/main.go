// Command printversion prints version.String(), for TestStamp.
package main

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/version"
)

func main() { fmt.Println(version.String()) }
