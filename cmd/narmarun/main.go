package main

import "os"

func main() {
	ctx, stop := notifyContext()
	status := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}
