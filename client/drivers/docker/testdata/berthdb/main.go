// Command berthdb is the docker driver tests' task, the one file of a
// FROM scratch image: a tiny "database" that keeps lines in a file of its
// volume. Its arguments are steps, run in order:
//
//	print:TEXT        print TEXT to stdout
//	stderr:TEXT       print TEXT to stderr
//	env:NAME          print NAME=value
//	caps              print the process's effective capabilities, as
//	                  /proc/self/status has them ("CapEff: 0000...")
//	alloc:MIB         take MIB MiB of memory, touching every page, and
//	                  print "allocated MIB MiB"
//	ifaces            print the names of the network interfaces it sees,
//	                  one line: "ifaces: eth0 lo"
//	write:PATH:TEXT   append TEXT to PATH, read the file back and print
//	                  "read PATH: CONTENT" (exit 4 if it cannot)
//	pwrite:PATH:OFF:TEXT  write TEXT at byte OFF of PATH, which must exist
//	                  (a block device), and print "pwrite PATH: ok"
//	pread:PATH:OFF:N  read N bytes at byte OFF of PATH and print
//	                  "pread PATH: CONTENT"
//	touch:PATH        create PATH (a mark the test waits for)
//	link:TARGET:PATH  replace PATH with a symbolic link to TARGET, as an
//	                  attacker would, and print "link PATH: ok" or why
//	                  not (and go on either way)
//	waitfile:PATH     wait until PATH exists
//	trap              from now on, SIGTERM prints "got SIGTERM" and exits 0
//	ignore            from now on, SIGTERM is ignored
//	block             wait for a signal, forever
//	sleep:DURATION    sleep
//	exit:N            exit with code N
//
// After the last step it exits 0.
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// held keeps what alloc took.
var held []byte

func main() {
	for _, step := range os.Args[1:] {
		verb, arg, _ := strings.Cut(step, ":")
		switch verb {
		case "print":
			fmt.Println(arg)
		case "stderr":
			fmt.Fprintln(os.Stderr, arg)
		case "env":
			fmt.Printf("%s=%s\n", arg, os.Getenv(arg))
		case "caps":
			status, err := os.ReadFile("/proc/self/status")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(4)
			}
			for _, line := range strings.Split(string(status), "\n") {
				if strings.HasPrefix(line, "CapEff:") {
					fmt.Println(strings.Join(strings.Fields(line), " "))
				}
			}
		case "alloc":
			n, err := strconv.Atoi(arg)
			if err != nil {
				fail(2, "alloc: %v", err)
			}
			held = make([]byte, n<<20)
			for i := 0; i < len(held); i += 4096 {
				held[i] = 1
			}
			fmt.Printf("allocated %d MiB\n", n)
		case "ifaces":
			ifs, err := net.Interfaces()
			if err != nil {
				fail(4, "ifaces: %v", err)
			}
			names := make([]string, len(ifs))
			for i, f := range ifs {
				names[i] = f.Name
			}
			sort.Strings(names)
			fmt.Println("ifaces: " + strings.Join(names, " "))
		case "write":
			path, text, _ := strings.Cut(arg, ":")
			write(path, text)
		case "pwrite", "pread":
			positioned(verb, arg)
		case "link":
			target, path, _ := strings.Cut(arg, ":")
			_ = os.RemoveAll(path)
			if err := os.Symlink(target, path); err != nil {
				fmt.Printf("link %s: %v\n", path, err)
			} else {
				fmt.Printf("link %s: ok\n", path)
			}
		case "touch":
			if err := os.WriteFile(arg, nil, 0o644); err != nil {
				fail(4, "touch: %v", err)
			}
		case "waitfile":
			for {
				if _, err := os.Stat(arg); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		case "trap":
			ch := make(chan os.Signal, 1)
			signal.Notify(ch, syscall.SIGTERM)
			go func() {
				<-ch
				fmt.Println("got SIGTERM")
				os.Exit(0)
			}()
		case "ignore":
			signal.Ignore(syscall.SIGTERM)
		case "block":
			for { // not select{}: with no other goroutine, that is a deadlock
				time.Sleep(time.Hour)
			}
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				fail(2, "sleep: %v", err)
			}
			time.Sleep(d)
		case "exit":
			n, err := strconv.Atoi(arg)
			if err != nil {
				fail(2, "exit: %v", err)
			}
			os.Exit(n)
		default:
			fail(2, "unknown step %q", step)
		}
	}
}

func write(path, text string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		fail(4, "write %s: %v", path, err)
	}
	if _, err := fmt.Fprintln(f, text); err != nil {
		fail(4, "write %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		fail(4, "write %s: %v", path, err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fail(4, "read %s: %v", path, err)
	}
	fmt.Printf("read %s: %s", path, b)
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(code)
}

// positioned runs pwrite (PATH:OFF:TEXT) or pread (PATH:OFF:N) on a file
// that must exist: a block device, written in place.
func positioned(verb, arg string) {
	parts := strings.SplitN(arg, ":", 3)
	if len(parts) != 3 {
		fail(2, "%s: want PATH:OFFSET:%s", verb, map[string]string{"pwrite": "TEXT", "pread": "N"}[verb])
	}
	off, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		fail(2, "%s: offset: %v", verb, err)
	}
	flag := os.O_RDONLY
	if verb == "pwrite" {
		flag = os.O_WRONLY
	}
	f, err := os.OpenFile(parts[0], flag, 0)
	if err != nil {
		fail(4, "%s: %v", verb, err)
	}
	defer f.Close()
	if verb == "pwrite" {
		if _, err := f.WriteAt([]byte(parts[2]), off); err != nil {
			fail(4, "pwrite: %v", err)
		}
		if err := f.Sync(); err != nil {
			fail(4, "pwrite: sync: %v", err)
		}
		fmt.Printf("pwrite %s: ok\n", parts[0])
		return
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		fail(2, "pread: length: %v", err)
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		fail(4, "pread: %v", err)
	}
	fmt.Printf("pread %s: %s\n", parts[0], buf)
}
