package api

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/berth-csi/berth/structs"
)

// Default retry budget (see Retry).
const (
	DefaultRetryMaxWait    = 15 * time.Second
	DefaultRetryMinBackoff = 100 * time.Millisecond
	DefaultRetryMaxBackoff = 2 * time.Second
)

// Retry is how the client sends a request again after a passing fault (a
// leader election, an agent restarting). The zero value retries within the
// defaults; see the package documentation for which failures are retried.
type Retry struct {
	// Disabled sends every request once.
	Disabled bool
	// MaxWait bounds the time from a request's first send to the start of
	// its last retry. Zero means DefaultRetryMaxWait.
	MaxWait time.Duration
	// Attempts bounds the sends of one request, the first included; zero
	// means no bound but MaxWait. One means no retry.
	Attempts int
	// MinBackoff is the wait before the first retry; each next wait
	// doubles, up to MaxBackoff, with up to half of it taken off at
	// random. Zero fields take DefaultRetryMinBackoff and
	// DefaultRetryMaxBackoff.
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// withDefaults fills the zero fields.
func (r Retry) withDefaults() Retry {
	if r.MaxWait <= 0 {
		r.MaxWait = DefaultRetryMaxWait
	}
	if r.MinBackoff <= 0 {
		r.MinBackoff = DefaultRetryMinBackoff
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = DefaultRetryMaxBackoff
	}
	if r.MaxBackoff < r.MinBackoff {
		r.MaxBackoff = r.MinBackoff
	}
	return r
}

// backoff is the wait before retry n (1 for the first), jittered.
func (r Retry) backoff(n int) time.Duration {
	d := r.MinBackoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	return d - rand.N(d/2+1)
}

// retrySafe reports whether a request of method that failed with err may
// be sent again. Any request may, when the server's answer says it was
// not applied: coded Unavailable or NotReady, or when its connection never
// opened (a dial that timed out). A connection refused is not
// retried: no agent listens at the address, and waiting seldom brings
// one; the caller is told at once. A GET, which changes
// nothing, may also after an Indeterminate answer, an uncoded 502, 503 or
// 504 (a proxy's), or a connection that broke or timed out, but not after
// a failure that a retry cannot mend (a certificate refused, a name that
// does not resolve). Nothing else is retried: a write whose answer was
// lost may have been applied.
func retrySafe(method string, err error) bool {
	var ae *Error
	if errors.As(err, &ae) {
		code := structs.ErrorCode(ae.Code)
		if !ae.guessed && (code == structs.CodeUnavailable || code == structs.CodeNotReady) {
			return true
		}
		return method == http.MethodGet && errors.Is(ae, structs.ErrUnavailable)
	}
	var ue *UnreachableError
	if !errors.As(err, &ue) {
		return false // the caller's context ended, or the request could not be built
	}
	if errors.Is(ue.Err, syscall.ECONNREFUSED) || permanent(ue.Err) {
		return false
	}
	// A write whose connection never opened (a dial that timed out) was
	// not sent, so it is not applied either.
	return method == http.MethodGet || notSent(ue.Err)
}

// permanent reports a transport failure that the same request would meet
// again: the TLS handshake refused on either side (the agent's
// certificate, or its alert refusing ours), or the host name unknown.
func permanent(err error) bool {
	var (
		cve *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
		uae x509.UnknownAuthorityError
		he  x509.HostnameError
		cie x509.CertificateInvalidError
		op  *net.OpError
		dns *net.DNSError
	)
	switch {
	case errors.As(err, &cve), errors.As(err, &rhe), errors.As(err, &uae), errors.As(err, &he), errors.As(err, &cie):
		return true
	case errors.As(err, &op) && op.Op == "remote error": // a TLS alert from the agent
		return true
	case errors.As(err, &dns):
		return dns.IsNotFound
	}
	return false
}

// notSent reports a transport failure that happened before any of the
// request was written: the dial failed (refused, timed out, the name did
// not resolve) or the TLS handshake did.
func notSent(err error) bool {
	var (
		op  *net.OpError
		cve *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
	)
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.As(err, &cve) || errors.As(err, &rhe)
}

// retrying sends a request with send until it succeeds, fails in a way
// that is not safe to retry (retrySafe), or the budget runs out; then it
// returns the last answer or error. Between tries it waits a backoff,
// cut short when the client's context ends, and calls the OnRetry hook.
func (c *Client) retrying(method, endpoint string, send func() (*http.Response, error)) (*http.Response, error) {
	start := time.Now()
	resp, err := send()
	if err == nil || c.retry.Disabled {
		return resp, err
	}
	r := c.retry.withDefaults()
	for attempt := 1; ; attempt++ {
		if !retrySafe(method, err) {
			return nil, err
		}
		wait := r.backoff(attempt)
		if (r.Attempts > 0 && attempt >= r.Attempts) || time.Since(start)+wait > r.MaxWait {
			return nil, fmt.Errorf("%w (gave up after %s in %s)",
				err, plural(attempt, "attempt"), time.Since(start).Round(time.Millisecond))
		}
		if c.onRetry != nil {
			c.onRetry(attempt, err)
		}
		if werr := sleepCtx(c.ctx, wait); werr != nil {
			return nil, fmt.Errorf("api: %s %s: %w (while waiting to retry after: %v)", method, endpoint, werr, err)
		}
		if resp, err = send(); err == nil {
			return resp, nil
		}
	}
}

// sleepCtx waits d, or until ctx ends (then its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// plural is "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
