package main

import (
	"fmt"
	"os"
)

func runServer(args []string) int { fmt.Fprintln(os.Stderr, "tenure server: not built yet"); return 1 }
