package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-csi/berth/internal/testlog"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// Endpoint is the local engine the tests use.
const Endpoint = "unix:///var/run/docker.sock"

// RepoPrefix is the repository prefix of every image Image builds.
const RepoPrefix = "berth-test/"

// timeout bounds each engine call of the harness.
const timeout = 2 * time.Minute

// Client returns a client of the engine at Endpoint, closed when the test
// ends, or skips the test, saying why: it does not run as root, or the
// engine does not answer.
func Client(t testing.TB) *client.Client {
	t.Helper()
	cli, err := Reachable(t.Context())
	if err != nil {
		testlog.Skip(t, err.Error())
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Reachable returns a client of the engine at Endpoint, for the caller to
// close, or why docker tests cannot run: not as root, or no engine
// answers.
func Reachable(ctx context.Context) (*client.Client, error) {
	if uid := os.Geteuid(); uid != 0 {
		return nil, fmt.Errorf("docker tests need root (running as uid %d)", uid)
	}
	cli, err := client.NewClientWithOpts(client.WithHost(Endpoint), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", Endpoint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker engine at %s is unreachable: %w", Endpoint, err)
	}
	return cli, nil
}

var binaries struct {
	sync.Mutex
	dir   string
	built map[string]string // package path -> binary
}

// StaticBinary builds the main package pkg (as go build names it, such as
// "./testdata/berthdb" from the test's directory) with CGO_ENABLED=0, once
// per test process, and returns the binary's path.
func StaticBinary(t testing.TB, pkg string) string {
	t.Helper()
	binaries.Lock()
	defer binaries.Unlock()
	if bin, ok := binaries.built[pkg]; ok {
		return bin
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		testlog.Skip(t, fmt.Sprintf("building %s needs the go tool: %v", pkg, err))
	}
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "berth-dockertest-")
		if err != nil {
			t.Fatalf("temp dir for binaries: %v", err)
		}
		binaries.dir, binaries.built = dir, map[string]string{}
	}
	bin := filepath.Join(binaries.dir, fmt.Sprintf("bin%d", len(binaries.built)))
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-trimpath", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	binaries.built[pkg] = bin
	return bin
}

// Cleanup removes the binaries StaticBinary built; TestMain calls it
// after m.Run.
func Cleanup() {
	binaries.Lock()
	defer binaries.Unlock()
	if binaries.dir != "" {
		_ = os.RemoveAll(binaries.dir)
		binaries.dir, binaries.built = "", nil
	}
}

var nameInvalid = regexp.MustCompile(`[^a-z0-9._-]`)

// Image builds an image FROM scratch that holds binary as /<name> and runs
// it as its entrypoint, tagged berth-test/<name>:<unique>, and returns
// the tag; the test's cleanup removes it.
func Image(t testing.TB, cli *client.Client, name, binary string) string {
	t.Helper()
	return buildImage(t, cli, name, binary, "", "")
}

// ImageAs is Image with an /etc/passwd of passwd's lines, running as user
// (USER in its Dockerfile): an image whose user only its own passwd
// file names.
func ImageAs(t testing.TB, cli *client.Client, name, binary, user, passwd string) string {
	t.Helper()
	return buildImage(t, cli, name, binary, user, passwd)
}

func buildImage(t testing.TB, cli *client.Client, name, binary, user, passwd string) string {
	t.Helper()
	name = nameInvalid.ReplaceAllString(strings.ToLower(name), "-")
	tag := RepoPrefix + name + ":" + Unique()
	bin, err := os.ReadFile(binary)
	if err != nil {
		t.Fatalf("read %s: %v", binary, err)
	}
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY %[1]s /%[1]s\nENTRYPOINT [\"/%[1]s\"]\n", name)
	files := map[string]file{name: {mode: 0o755, data: bin}}
	if passwd != "" {
		dockerfile += "COPY passwd /etc/passwd\n"
		files["passwd"] = file{mode: 0o644, data: []byte(passwd)}
	}
	if user != "" {
		dockerfile += "USER " + user + "\n"
	}
	files["Dockerfile"] = file{mode: 0o644, data: []byte(dockerfile)}
	buildCtx, err := tarball(files)
	if err != nil {
		t.Fatalf("build context: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	resp, err := cli.ImageBuild(ctx, buildCtx, build.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: "Dockerfile", Remove: true, ForceRemove: true,
		// No cache and a label of its own: every build is an image of
		// its own, so that test packages building the same binary at
		// once never share one that another's cleanup removes.
		NoCache: true, Version: build.BuilderV1, Labels: map[string]string{"berth-test": "true", "berth-test.tag": tag},
	})
	if err != nil {
		t.Fatalf("build image %s: %v", tag, err)
	}
	err = streamError(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		t.Fatalf("build image %s: %v", tag, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), timeout)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, tag, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove image %s: %v", tag, err)
		}
	})
	return tag
}

// Unique is a random string of 8 hex digits, for names and tags.
func Unique() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type file struct {
	mode int64
	data []byte
}

func tarball(files map[string]file) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return &buf, nil
}

// streamError reads the engine's JSON progress stream to its end and
// returns the error it reports, if any.
func streamError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("read the engine's progress: %w", err)
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}
