package agent

import (
	"context"
	"fmt"
	"io"
)

// Run is `berth agent ...`. It returns the process exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "berth agent: not wired yet")
	return 1
}
