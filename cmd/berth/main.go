package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/berth-csi/berth/client/drivers/exec"
	"github.com/berth-csi/berth/cmd/berth/internal/agent"
	"github.com/berth-csi/berth/cmd/berth/internal/command"
)

func main() {
	// Tasks start by re-running this binary as their init; it returns
	// here only when this process is not one.
	exec.Init()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app := &command.App{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Getenv: os.Getenv,
		Agent:  agent.Run,
	}
	code := app.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
