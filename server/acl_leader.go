package server

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/berth-csi/berth/internal/backoff"
	"github.com/berth-csi/berth/structs"
)

// leaderTokenAccessor names the leader's own management token. A leader
// sends it when it relays a call of its own (a controller call for a
// user's request, a volumewatcher detach) to a client through the server
// that holds the client's session: without TLS nothing else tells that
// server the call comes from a server. Each leader makes a new secret when
// it takes office and writes only its hash; the secret stays in its
// memory. The token is hidden from the ACL endpoints, which refuse to
// change or delete it.
const leaderTokenAccessor = "00000000-0000-0000-0000-000000000001"

// leaderTokenName is the name the leader token shows in a snapshot.
const leaderTokenName = "leader token (internal: rotated at each election)"

// authInfo is what every request carries of its caller's token.
type authInfo interface {
	GetAuthToken() string
	SetAuthToken(string)
}

func isLeaderToken(accessor string) bool { return accessor == leaderTokenAccessor }

// leaderTokenRetry paces a new leader's tries to write its token: three,
// a second apart.
var leaderTokenRetry = backoff.Policy{Initial: time.Second, Max: time.Second, MaxAttempts: 3}

// establishLeaderToken makes this leader's token, when ACLs are on. The
// old leader's is deleted first: a token's secret never changes in place.
func (s *Server) establishLeaderToken(ctx context.Context) {
	if !s.config.ACLEnabled {
		return
	}
	retryLeaderToken(ctx, leaderTokenRetry, s.logger, s.writeLeaderToken)
}

// retryLeaderToken calls write as p allows (until it succeeds, p's
// attempts are spent or ctx ends), logging each failure with its attempt.
func retryLeaderToken(ctx context.Context, p backoff.Policy, logger hclog.Logger, write func() error) {
	attempt := 0
	_ = backoff.Retry(ctx, p, nil, func(context.Context) error {
		attempt++
		err := write()
		if err != nil {
			logger.Error("cannot write the leader token; relays of this leader's own calls to clients on other servers will be refused",
				"attempt", attempt, "error", err)
		}
		return err
	})
}

func (s *Server) writeLeaderToken() error {
	existing, err := s.State().ACLTokenByAccessorID(nil, leaderTokenAccessor)
	if err != nil {
		return err
	}
	if existing != nil {
		del := &structs.ACLTokenDeleteRequest{AccessorIDs: []string{leaderTokenAccessor}}
		if _, _, err := raftApply[any](s, structs.ACLTokenDeleteRequestType, del); err != nil {
			return err
		}
	}
	secret := structs.NewUUID()
	token := &structs.ACLToken{AccessorID: leaderTokenAccessor, SecretHash: hashSecret(secret), Name: leaderTokenName,
		Type: structs.ACLTokenTypeManagement, CreateTime: time.Now().UTC()}
	req := &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{token}}
	if _, _, err := raftApply[any](s, structs.ACLTokenUpsertRequestType, req); err != nil {
		return err
	}
	s.leaderSecret.Store(&secret)
	return nil
}

// revokeLeaderToken forgets this server's leader secret when it stops
// leading; the next leader replaces the token.
func (s *Server) revokeLeaderToken() { s.leaderSecret.Store(nil) }

// relayToken is the token a server sends when it relays a call to the
// server that holds a client's session: the caller's, when the call
// carries one (the holder checks it again), else this leader's own.
func (s *Server) relayToken(args any) {
	a, ok := args.(authInfo)
	if !ok || a.GetAuthToken() != "" {
		return
	}
	if secret := s.leaderSecret.Load(); secret != nil {
		a.SetAuthToken(*secret)
	}
}

// stripToken clears the token of a call before it goes to a client: a
// client never sees a caller's token, nor the leader's.
func stripToken(args any) {
	if a, ok := args.(authInfo); ok {
		a.SetAuthToken("")
	}
}

// withoutTokens clears every caller token msg carries, the claims of a
// batch or a plan included, so that no secret reaches the raft log.
func withoutTokens(msg any) {
	stripToken(msg)
	var claims []structs.CSIVolumeClaimRequest
	switch m := msg.(type) {
	case *structs.CSIVolumeClaimBatchRequest:
		claims = m.Claims
	case *structs.PlanApplyRequest:
		claims = m.Claims
	case *structs.CSIVolumeRegisterBatchRequest:
		for i := range m.Registers {
			m.Registers[i].AuthToken = ""
		}
	case *structs.NodeFingerprintBatchRequest:
		for i := range m.Fingerprints {
			m.Fingerprints[i].AuthToken = ""
		}
	}
	for i := range claims {
		claims[i].AuthToken = ""
	}
}
