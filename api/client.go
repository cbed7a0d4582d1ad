package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ugorji/go/codec"

	"github.com/berth-csi/berth/structs"
)

// DefaultAddress is the HTTP API's address when neither Config.Address nor
// BERTH_ADDR names one.
const DefaultAddress = "http://127.0.0.1:4746"

// Environment variables DefaultConfig reads (the CLI's too).
const (
	AddressEnv       = "BERTH_ADDR"            // the HTTP API's address
	TokenEnv         = "BERTH_TOKEN"           // the ACL token (Config.Token)
	CACertEnv        = "BERTH_CACERT"          // TLSConfig.CACert
	ClientCertEnv    = "BERTH_CLIENT_CERT"     // TLSConfig.ClientCert
	ClientKeyEnv     = "BERTH_CLIENT_KEY"      // TLSConfig.ClientKey
	TLSServerNameEnv = "BERTH_TLS_SERVER_NAME" // TLSConfig.TLSServerName
)

// HeaderToken carries the ACL token of a request.
const HeaderToken = "X-Berth-Token"

// Config configures a Client.
type Config struct {
	// Address is the HTTP API's base URL; "host:port" means http. Empty
	// means $BERTH_ADDR, else DefaultAddress.
	Address string

	// Token is the ACL token, sent as X-Berth-Token with every request
	// (blocking queries and Raw ones too). Empty sends none: anonymous.
	Token string

	// TLS configures an https:// Address: the CA to verify the agent's
	// certificate with, and the client certificate to present.
	TLS TLSConfig

	// HTTPClient sends the requests. Nil means a client of its own that
	// gives up on a connection after DialTimeout. There is no overall
	// timeout, because blocking queries may wait for minutes: each request
	// waits for its answer's headers as long as Timeouts says.
	HTTPClient *http.Client

	// Timeouts bound the wait for an answer; zero fields take the defaults.
	Timeouts Timeouts

	// Retry bounds how a request is sent again after a passing fault;
	// the zero value retries for up to DefaultRetryMaxWait, and
	// Retry{Disabled: true} never does. See the package documentation
	// for what is retried.
	Retry Retry

	// OnRetry, if set, is called before each retry with the number of
	// the attempt that failed (1 for the first send) and its error: a
	// log line, or a count of the answers that were retried.
	OnRetry func(attempt int, err error)
}

// TLSConfig is how the client speaks HTTPS to an agent. It applies when
// Config.HTTPClient is nil; the files are read once, by NewClient.
type TLSConfig struct {
	// CACert is the PEM file of the CA that signed the agent's
	// certificate; empty trusts the system's CAs.
	CACert string
	// ClientCert and ClientKey are the PEM files of the certificate to
	// present, for an agent with verify_https_client; both or neither.
	ClientCert string
	ClientKey  string
	// TLSServerName is the name the agent's certificate must carry
	// (e.g. server.global.berth); empty means the address's host.
	TLSServerName string
}

// Timeouts bound how long a request waits for its answer's headers (the
// body, once they came, is read to the end).
type Timeouts struct {
	// Read bounds a read; a blocking query waits its wait time (and the
	// server's jitter of up to a sixteenth) on top. Default 30 s.
	Read time.Duration
	// Write bounds a write. Default 150 s: the servers give a plugin's
	// controller up to 2 minutes to create, delete or snapshot a volume.
	Write time.Duration
}

// Default timeouts (see Timeouts).
const (
	DialTimeout         = 10 * time.Second
	DefaultReadTimeout  = 30 * time.Second
	DefaultWriteTimeout = 150 * time.Second
	// defaultBlockingWait is the wait of a blocking query that names none
	// (the servers' default).
	defaultBlockingWait = 5 * time.Minute
)

// DefaultConfig returns a Config with the address, token and TLS files
// from the environment.
func DefaultConfig() Config { return ConfigFromEnv(os.Getenv) }

// ConfigFromEnv is DefaultConfig reading the environment through getenv
// (the BERTH_* variables above; DefaultAddress when BERTH_ADDR is empty).
func ConfigFromEnv(getenv func(string) string) Config {
	c := Config{
		Address: getenv(AddressEnv),
		Token:   getenv(TokenEnv),
		TLS: TLSConfig{
			CACert:        getenv(CACertEnv),
			ClientCert:    getenv(ClientCertEnv),
			ClientKey:     getenv(ClientKeyEnv),
			TLSServerName: getenv(TLSServerNameEnv),
		},
	}
	if c.Address == "" {
		c.Address = DefaultAddress
	}
	return c
}

// Client talks to one berth agent's HTTP API.
type Client struct {
	base     *url.URL
	token    string
	http     *http.Client
	ctx      context.Context
	timeouts Timeouts
	retry    Retry
	onRetry  func(attempt int, err error)
}

// NewClient returns a client for cfg.Address. It does not contact the server.
func NewClient(cfg Config) (*Client, error) {
	addr := cfg.Address
	if addr == "" {
		addr = DefaultConfig().Address
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return nil, fmt.Errorf("api: address %q is not a URL: %w", cfg.Address, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("api: address %q: scheme must be http or https", cfg.Address)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("api: address %q has no host", cfg.Address)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = DialTimeout
		tc, err := cfg.TLS.config()
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig = tc
		hc = &http.Client{Transport: tr}
	}
	t := cfg.Timeouts
	if t.Read <= 0 {
		t.Read = DefaultReadTimeout
	}
	if t.Write <= 0 {
		t.Write = DefaultWriteTimeout
	}
	return &Client{base: u, token: cfg.Token, http: hc, ctx: context.Background(), timeouts: t,
		retry: cfg.Retry, onRetry: cfg.OnRetry}, nil
}

// config builds the *tls.Config of t, reading its files.
func (t TLSConfig) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.TLSServerName}
	if t.CACert != "" {
		pem, err := os.ReadFile(t.CACert)
		if err != nil {
			return nil, fmt.Errorf("api: read CA certificate: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("api: CA certificate %q holds no PEM certificate", t.CACert)
		}
	}
	switch {
	case t.ClientCert != "" && t.ClientKey != "":
		cert, err := tls.LoadX509KeyPair(t.ClientCert, t.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("api: load client certificate %q and key %q: %w", t.ClientCert, t.ClientKey, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case t.ClientCert != "":
		return nil, fmt.Errorf("api: client certificate %q has no key; give the client key too", t.ClientCert)
	case t.ClientKey != "":
		return nil, fmt.Errorf("api: client key %q has no certificate; give the client certificate too", t.ClientKey)
	}
	return cfg, nil
}

// Address returns the base URL the client sends to.
func (c *Client) Address() string { return c.base.String() }

// WithToken returns a copy of the client that sends token (empty: none).
func (c *Client) WithToken(token string) *Client {
	n := *c
	n.token = token
	return &n
}

// WithContext returns a copy of the client whose requests are bound to ctx:
// they end when it is cancelled.
func (c *Client) WithContext(ctx context.Context) *Client {
	n := *c
	n.ctx = ctx
	return &n
}

// query sends a GET and decodes the JSON answer into out.
func (c *Client) query(endpoint string, params url.Values, out any, q *QueryOptions) (*QueryMeta, error) {
	return c.queryWithHeader(endpoint, params, nil, out, q)
}

// queryWithHeader is query with extra request headers.
func (c *Client) queryWithHeader(endpoint string, params url.Values, header http.Header, out any, q *QueryOptions) (*QueryMeta, error) {
	if params == nil {
		params = url.Values{}
	}
	q.encode(params)
	resp, err := c.do(http.MethodGet, endpoint, params, acceptMsgpack(header), nil)
	if err != nil {
		return nil, err
	}
	defer drain(resp)
	qm := parseQueryMeta(resp)
	if err := decodeBody(resp, endpoint, out); err != nil {
		return nil, err
	}
	return qm, nil
}

// write sends method with in as its JSON body (if not nil) and decodes the
// answer into out (if not nil).
func (c *Client) write(method, endpoint string, params url.Values, in, out any) (*WriteMeta, error) {
	return c.writeWithHeader(method, endpoint, params, nil, in, out)
}

// writeWithHeader is write with extra request headers.
func (c *Client) writeWithHeader(method, endpoint string, params url.Values, header http.Header, in, out any) (*WriteMeta, error) {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("api: encode request for %s: %w", endpoint, err)
		}
		body = b
	}
	if out != nil {
		header = acceptMsgpack(header)
	}
	resp, err := c.do(method, endpoint, params, header, body)
	if err != nil {
		return nil, err
	}
	defer drain(resp)
	wm := &WriteMeta{LastIndex: headerIndex(resp)}
	if out != nil {
		if err := decodeBody(resp, endpoint, out); err != nil {
			return nil, err
		}
	}
	return wm, nil
}

// do sends a request with header added to its own, and sends it again
// while it fails in a way that is safe to retry (see retrying); a non-2xx
// answer becomes an *Error. body (nil for none) is sent whole each time.
func (c *Client) do(method, endpoint string, params url.Values, header http.Header, body []byte) (*http.Response, error) {
	return c.retrying(method, endpoint, func() (*http.Response, error) {
		return c.doOnce(method, endpoint, params, header, body)
	})
}

// doOnce sends one request, with no retry: what a streaming request (a
// log follow) must use, since a stream cut halfway cannot be sent again.
func (c *Client) doOnce(method, endpoint string, params url.Values, header http.Header, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
		if header.Get("Content-Type") == "" {
			header = header.Clone()
			if header == nil {
				header = http.Header{}
			}
			header.Set("Content-Type", "application/json")
		}
	}
	return c.roundTrip(method, endpoint, params, header, rd, c.headerTimeout(method, params))
}

// roundTrip sends one request with body (nil for none, streamed as it is
// read) and header added to its own, and waits wait for the answer's
// headers. A non-2xx answer becomes an *Error; an agent that does not
// answer, an *UnreachableError.
func (c *Client) roundTrip(method, endpoint string, params url.Values, header http.Header, body io.Reader,
	wait time.Duration) (*http.Response, error) {
	// endpoint is already escaped (IDs go through escape).
	target := c.base.String() + endpoint
	if len(params) > 0 {
		target += "?" + params.Encode()
	}
	ctx, cancel := context.WithCancel(c.ctx)
	timedOut := make(chan struct{})
	timer := time.AfterFunc(wait, func() { close(timedOut); cancel() })
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		timer.Stop()
		cancel()
		return nil, fmt.Errorf("api: build %s %s: %w", method, endpoint, err)
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.token != "" {
		req.Header.Set(HeaderToken, c.token)
	}
	resp, err := c.http.Do(req)
	if !timer.Stop() && err == nil {
		<-timedOut // the timer fired as the answer came: its body is cut
		_ = resp.Body.Close()
		err = context.Canceled
	}
	if err != nil {
		cancel()
		if c.ctx.Err() != nil {
			return nil, fmt.Errorf("api: %s %s: %w", method, endpoint, c.ctx.Err())
		}
		select {
		case <-timedOut:
			return nil, &UnreachableError{Address: c.base.String(),
				Err: fmt.Errorf("no answer to %s %s within %s (is this a berth agent's HTTP address, and is it up?)", method, endpoint, wait)}
		default:
		}
		return nil, &UnreachableError{Address: c.base.String(), Err: unwrapURLError(err)}
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer drain(resp)
		return nil, errorFromResponse(resp)
	}
	return resp, nil
}

// headerTimeout is how long a request waits for its answer's headers.
func (c *Client) headerTimeout(method string, params url.Values) time.Duration {
	if method != http.MethodGet {
		return c.timeouts.Write
	}
	if params.Get("index") == "" {
		return c.timeouts.Read
	}
	wait := defaultBlockingWait
	if w, err := time.ParseDuration(params.Get("wait")); err == nil && w > 0 {
		wait = w
	}
	return wait + wait/16 + c.timeouts.Read
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

func decodeBody(resp *http.Response, endpoint string, out any) error {
	if resp.Header.Get("Content-Type") == structs.MediaTypeMsgpack {
		if err := codec.NewDecoder(resp.Body, structs.HTTPMsgpackHandle).Decode(out); err != nil {
			return fmt.Errorf("api: decode answer of %s: %w", endpoint, err)
		}
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("api: decode answer of %s: %w", endpoint, err)
	}
	return nil
}

// acceptMsgpack returns header asking for the answer in msgpack
// (structs.HTTPMsgpackHandle), unless it asks for something already:
// what the API shows, as JSON shows it, at a fraction of JSON's cost to
// encode and decode. An agent that does not know it answers JSON, which
// decodeBody reads too.
func acceptMsgpack(header http.Header) http.Header {
	if header.Get("Accept") != "" {
		return header
	}
	header = header.Clone()
	if header == nil {
		header = http.Header{}
	}
	header.Set("Accept", structs.MediaTypeMsgpack)
	return header
}

// drain reads what is left so the connection can be reused, then closes.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
}

func headerIndex(resp *http.Response) uint64 {
	n, _ := strconv.ParseUint(resp.Header.Get(HeaderIndex), 10, 64)
	return n
}

func parseQueryMeta(resp *http.Response) *QueryMeta {
	qm := &QueryMeta{LastIndex: headerIndex(resp)}
	qm.KnownLeader = resp.Header.Get(HeaderKnownLeader) == "true"
	if ms, err := strconv.ParseUint(resp.Header.Get(HeaderLastContact), 10, 64); err == nil {
		qm.LastContact = time.Duration(ms) * time.Millisecond
	}
	qm.NextToken = resp.Header.Get(HeaderNextToken)
	return qm
}

// escape makes an ID safe as one path segment.
func escape(id string) string { return url.PathEscape(id) }
