package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/berth-csi/berth/structs"
)

// bootstrapTokenName names the management token bootstrap makes.
const bootstrapTokenName = "Bootstrap Token"

// ACLBootstrapResetFile is the file in a server's data dir (the agent's
// <data_dir>/server) that lets `berth acl bootstrap` run once more after
// the management token is lost: an operator writes the reset index into
// it on the leader. It is read when a bootstrap request reaches the
// leader, never kept: once a bootstrap is applied, the reset index moves
// on and the file's no longer matches.
const ACLBootstrapResetFile = "acl-bootstrap-reset"

// maxResetFileBytes bounds what is read of the reset file: an index is at
// most 20 digits, with a newline and some spaces around it.
const maxResetFileBytes = 64

// errResetFile is the sentinel of every reset file that cannot be used
// (unreadable, too long, not an index).
var errResetFile = errors.New("the acl-bootstrap-reset file cannot be used")

// Bootstrap makes a management token: the cluster's first, or, after a
// reset, one more. It is open to anonymous callers: before it no token
// exists, and a reset is for when the management token is lost. Once a
// bootstrap is done, another one goes through only when the leader's
// data dir holds an acl-bootstrap-reset file with the current reset index
// (the raft index of the latest bootstrap, which the refusal names). The
// tokens made before stay valid. The answer is the token with its
// SecretID, the one time it is shown; the servers keep only its hash.
func (a *ACL) Bootstrap(args *structs.ACLBootstrapRequest, reply *structs.ACLTokenUpsertResponse) error {
	if err := a.srv.aclsEnabled("ACL.Bootstrap"); err != nil {
		return err
	}
	resetIndex, err := a.srv.bootstrapResetIndex()
	if err != nil {
		return err
	}
	accessor, secret := structs.NewUUID(), structs.NewUUID()
	token := &structs.ACLToken{AccessorID: accessor, SecretHash: hashSecret(secret), Name: bootstrapTokenName,
		Type: structs.ACLTokenTypeManagement, CreateTime: time.Now().UTC()}
	req := &structs.ACLBootstrapRequest{Token: token, ResetIndex: resetIndex}
	_, index, err := raftApply[any](a.srv, structs.ACLBootstrapRequestType, req)
	if err != nil {
		return err
	}
	if resetIndex > 0 {
		a.srv.logger.Warn("acl bootstrap reset: a new management token was made; the tokens made before stay valid",
			"accessor_id", accessor, "reset_index", resetIndex, "new_reset_index", index)
	} else {
		a.srv.logger.Info("acl bootstrap done", "accessor_id", accessor, "reset_index", index)
	}
	out := publicToken(token)
	out.SecretID = secret
	out.CreateIndex, out.ModifyIndex = index, index
	reply.Tokens = []*structs.ACLToken{out}
	reply.Index = index
	return nil
}

// bootstrapResetIndex is the reset index a bootstrap expects the state to
// hold: 0 before the first bootstrap; after it, the current reset index
// when this server's acl-bootstrap-reset file names it. Otherwise the
// bootstrap is refused, saying which index the file must hold. The FSM
// checks the index again: this read may be behind the log.
func (s *Server) bootstrapResetIndex() (uint64, error) {
	current, err := s.State().ACLBootstrapIndex()
	if err != nil || current == 0 {
		return 0, err
	}
	path := filepath.Join(s.config.DataDir, ACLBootstrapResetFile)
	want, err := readResetFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, structs.NewError(structs.CodeConflict,
			"ACL bootstrap already done (reset index: %d); use the management token made then, or, if it is lost, "+
				"write %d into the file acl-bootstrap-reset in the server data dir of the leader, server %s "+
				"(<data_dir>/server/acl-bootstrap-reset), and run the bootstrap again", current, current, s.config.NodeName)
	case errors.Is(err, errResetFile):
		s.logger.Warn("acl bootstrap reset refused", "path", path, "reset_index", current, "error", err)
		return 0, structs.NewError(structs.CodeBadRequest,
			"ACL bootstrap reset on the leader (server %s): %v; write the reset index %d into it",
			s.config.NodeName, err, current)
	case err != nil:
		s.logger.Error("acl bootstrap reset: cannot read the reset file", "path", path, "error", err)
		return 0, structs.NewError(structs.CodeInternal,
			"ACL bootstrap reset: the leader (server %s) cannot read its acl-bootstrap-reset file; its log says why", s.config.NodeName)
	case want != current:
		s.logger.Warn("acl bootstrap reset refused: the reset file holds another index", "path", path,
			"file_index", want, "reset_index", current)
		return 0, structs.NewError(structs.CodeConflict,
			"ACL bootstrap reset: the acl-bootstrap-reset file on the leader (server %s) holds index %d, but the reset index is %d; "+
				"write %d into it and run the bootstrap again", s.config.NodeName, want, current, current)
	}
	s.logger.Warn("acl bootstrap reset: the reset file names the reset index; making a new management token",
		"path", path, "reset_index", current)
	return current, nil
}

// readResetFile reads the index in a reset file. A file that is missing
// is fs.ErrNotExist; one that does not hold a single index is errResetFile.
func readResetFile(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxResetFileBytes+1))
	if err != nil {
		return 0, err
	}
	if len(b) > maxResetFileBytes {
		return 0, fmt.Errorf("%w: it is longer than %d bytes; it must hold only the index", errResetFile, maxResetFileBytes)
	}
	text := strings.TrimSpace(string(b))
	idx, err := strconv.ParseUint(text, 10, 64)
	if err != nil || idx == 0 {
		return 0, fmt.Errorf("%w: it holds %q, not a raft index", errResetFile, text)
	}
	return idx, nil
}
