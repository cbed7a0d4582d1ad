package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/berth-csi/berth/cmd/berth/internal/agent"
	"github.com/berth-csi/berth/cmd/berth/internal/command"
)

func main() {
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
