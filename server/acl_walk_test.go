package server

import (
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/state/statetest"
	"github.com/berth-csi/berth/structs"
)

// access is who an endpoint lets through.
type access int

const (
	// open: every caller, anonymous included.
	open access = iota
	// read: any token that may read (the read-only token here); never an
	// anonymous caller.
	read
	// write: management (or a token with the write it needs); never the
	// read-only token, never an anonymous caller.
	write
	// register: Node.Register. A new node registers with whatever secret
	// it brings (with mTLS, only a client certificate reaches it); an
	// existing node only with its own secret (TestNodeIdentity_*). No
	// secret at all is refused.
	register
)

func (a access) String() string {
	return [...]string{"open", "read", "write", "register"}[a]
}

// walkRule is how the walk calls one method: who may call it, written
// here independently of the production table (rpcMethods in
// rpc_table.go, which TestRPCTable_MatchesWalk checks against it), and
// the request to send (a fresh one per call).
type walkRule struct {
	access access
	args   func() any
}

// accessOf is who the production table lets call method.
func accessOf(method string) access {
	switch rpcMethods[method].guard.reachOf() {
	case reachAnyone:
		return open
	case reachReaders:
		return read
	case reachNewNodes:
		return register
	}
	return write
}

// walkRules has a request for every RPC method the server serves. A
// method the server serves without a row here fails the walk, naming it
// (and one without a row in rpcMethods fails the server's start).
// The requests name the objects walkSeed makes, so that a check that
// reads them (a node's secret, an alloc's namespace) is reached.
func walkRules() map[string]walkRule {
	job := statetest.Job("walk-job")
	return map[string]walkRule{
		"Status.Leader":                 {open, func() any { return &structs.GenericRequest{} }},
		"Status.Peers":                  {open, func() any { return &structs.GenericRequest{} }},
		"Status.ReadIndex":              {open, func() any { return &structs.GenericRequest{} }},
		"Status.HasNodeConn":            {open, func() any { return &structs.NodeSpecificRequest{NodeID: "node-1"} }},
		"Status.Members":                {read, func() any { return &structs.GenericRequest{} }},
		"Operator.RaftGetConfiguration": {read, func() any { return &structs.GenericRequest{} }},
		// The whole state, out or in: a management token only.
		"Operator.SnapshotSave":    {write, func() any { return &structs.SnapshotSaveRequest{} }},
		"Operator.SnapshotRead":    {write, func() any { return &structs.SnapshotReadRequest{Handle: "missing"} }},
		"Operator.SnapshotUpload":  {write, func() any { return &structs.SnapshotUploadRequest{Handle: "missing", Data: []byte{1}} }},
		"Operator.SnapshotRestore": {write, func() any { return &structs.SnapshotRestoreRequest{Handle: "missing"} }},

		"ACL.Bootstrap":    {open, func() any { return &structs.ACLBootstrapRequest{} }},
		"ACL.WhoAmI":       {open, func() any { return &structs.ACLTokenGetRequest{} }},
		"ACL.GetPolicy":    {read, func() any { return &structs.ACLPolicyGetRequest{Name: "readonly"} }},
		"ACL.ListPolicies": {read, func() any { return &structs.ACLPolicyListRequest{} }},
		"ACL.GetToken":     {read, nil}, // args made in the walk: the read-only token reads itself
		"ACL.ListTokens":   {write, func() any { return &structs.ACLTokenListRequest{} }},
		"ACL.UpsertPolicies": {write, func() any {
			return &structs.ACLPolicyUpsertRequest{Policies: []*structs.ACLPolicy{{Name: "walk", Rules: readOnlyRules}}}
		}},
		"ACL.DeletePolicies": {write, func() any { return &structs.ACLPolicyDeleteRequest{Names: []string{"missing"}} }},
		"ACL.UpsertTokens": {write, func() any {
			return &structs.ACLTokenUpsertRequest{Tokens: []*structs.ACLToken{{Name: "walk", Type: structs.ACLTokenTypeManagement}}}
		}},
		"ACL.DeleteTokens": {write, func() any { return &structs.ACLTokenDeleteRequest{AccessorIDs: []string{"missing"}} }},

		// A collection now: management only (it removes what it may).
		"System.GarbageCollect": {write, func() any { return &structs.SystemGCRequest{} }},

		"Node.Register": {register, func() any {
			return &structs.NodeRegisterRequest{Node: statetest.Node(fmt.Sprintf("walk-node-%d", walkNodes.Add(1)))}
		}},
		"Node.UpdateStatus": {write, func() any {
			return &structs.NodeUpdateStatusRequest{NodeID: "node-1", Status: structs.NodeStatusReady}
		}},
		"Node.UpdateFingerprint": {write, func() any { return &structs.NodeFingerprintRequest{NodeID: "node-1"} }},
		"Node.UpdateAlloc": {write, func() any {
			return &structs.AllocUpdateRequest{Allocs: []*structs.Allocation{{ID: "alloc-1"}}}
		}},
		"Node.GetClientAllocs": {write, func() any { return &structs.NodeSpecificRequest{NodeID: "node-1"} }},
		"Node.Deregister":      {write, func() any { return &structs.NodeDeregisterRequest{NodeIDs: []string{"missing"}} }},
		"Node.List":            {read, func() any { return &structs.NodeListRequest{} }},
		"Node.Get":             {read, func() any { return &structs.NodeSpecificRequest{NodeID: "node-1"} }},
		"Node.UpdateDrain":     {write, func() any { return &structs.NodeUpdateDrainRequest{NodeID: "node-1"} }},
		"Node.UpdateEligibility": {write, func() any {
			return &structs.NodeUpdateEligibilityRequest{NodeID: "node-1", Eligibility: structs.NodeSchedulingEligible}
		}},

		"Job.Register":    {write, func() any { return &structs.JobRegisterRequest{Job: job.Copy()} }},
		"Job.Deregister":  {write, func() any { return &structs.JobDeregisterRequest{JobID: "walk-job"} }},
		"Job.List":        {read, func() any { return &structs.JobListRequest{} }},
		"Job.Get":         {read, func() any { return &structs.JobSpecificRequest{JobID: "walk-job"} }},
		"Job.Allocations": {read, func() any { return &structs.JobSpecificRequest{JobID: "walk-job"} }},
		"Job.Plan":        {write, func() any { return &structs.JobPlanRequest{Job: job.Copy()} }},
		"Job.Versions":    {read, func() any { return &structs.JobSpecificRequest{JobID: "walk-job"} }},
		"Job.Revert":      {write, func() any { return &structs.JobRevertRequest{JobID: "walk-job", Version: 0} }},
		"Alloc.List":      {read, func() any { return &structs.AllocListRequest{} }},
		"Alloc.Get":       {read, func() any { return &structs.AllocSpecificRequest{AllocID: "alloc-1"} }},
		// After index 1 there are walkSeed's events: it answers at once.
		"Event.Next": {read, func() any { return &structs.EventNextRequest{Index: 1} }},

		"ClientAllocations.Logs": {write, func() any {
			return &structs.ClientAllocLogsRequest{AllocID: "alloc-1", Task: "web", Kind: "stdout"}
		}},
		"ClientStatus.Ping": {write, func() any { return &structs.NodeSpecificRequest{NodeID: "node-1"} }},

		"CSIPlugin.List":   {read, func() any { return &structs.CSIPluginListRequest{} }},
		"CSIPlugin.Get":    {read, func() any { return &structs.CSIPluginGetRequest{ID: "hostpath"} }},
		"CSIPlugin.Delete": {write, func() any { return &structs.CSIPluginDeleteRequest{ID: "missing"} }},

		"CSIVolume.Register": {write, func() any {
			return &structs.CSIVolumeRegisterRequest{Volumes: []*structs.CSIVolume{statetest.Volume("walk-vol", "hostpath")}}
		}},
		"CSIVolume.Deregister": {write, func() any { return &structs.CSIVolumeDeregisterRequest{VolumeIDs: []string{"missing"}} }},
		"CSIVolume.Create": {write, func() any {
			return &structs.CSIVolumeCreateRequest{Volumes: []*structs.CSIVolume{statetest.Volume("walk-new", "hostpath")}}
		}},
		"CSIVolume.Delete": {write, func() any { return &structs.CSIVolumeDeleteRequest{VolumeIDs: []string{"missing"}} }},
		"CSIVolume.Claim": {write, func() any {
			return &structs.CSIVolumeClaimRequest{VolumeID: "data", AllocationID: "alloc-1", NodeID: "node-1",
				Mode: structs.CSIVolumeClaimRead, State: structs.CSIVolumeClaimStateTaken}
		}},
		"CSIVolume.Publish": {write, func() any {
			return &structs.CSIVolumePublishRequest{VolumeID: "data", AllocationID: "alloc-1", NodeID: "node-1"}
		}},
		"CSIVolume.NodeExpand": {write, func() any {
			return &structs.CSIVolumeNodeExpandRequest{VolumeID: "data", AllocationID: "alloc-1", NodeID: "node-1"}
		}},
		"CSIVolume.Detach":         {write, func() any { return &structs.CSIVolumeDetachRequest{VolumeID: "data", NodeID: "missing"} }},
		"CSIVolume.List":           {read, func() any { return &structs.CSIVolumeListRequest{} }},
		"CSIVolume.Get":            {read, func() any { return &structs.CSIVolumeGetRequest{ID: "data"} }},
		"CSIVolume.CreateSnapshot": {write, func() any { return &structs.CSISnapshotCreateRequest{VolumeID: "data", Name: "walk"} }},
		"CSIVolume.DeleteSnapshot": {write, func() any { return &structs.CSISnapshotDeleteRequest{PluginID: "hostpath", SnapshotID: "missing"} }},
		"CSIVolume.ListSnapshots":  {read, func() any { return &structs.CSISnapshotListRequest{PluginID: "hostpath"} }},
		"CSIVolume.ListExternal":   {read, func() any { return &structs.CSIVolumeExternalListRequest{PluginID: "hostpath"} }},

		// Server-to-server relays of calls to clients: another server
		// (its certificate) or a management token (a leader's) only.
		"ClientCSI.ControllerCreateVolume": {write, func() any {
			return &structs.ClientCSIControllerCreateVolumeRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerDeleteVolume": {write, func() any {
			return &structs.ClientCSIControllerDeleteVolumeRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerValidateVolume": {write, func() any {
			return &structs.ClientCSIControllerValidateVolumeRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerExpandVolume": {write, func() any {
			return &structs.ClientCSIControllerExpandVolumeRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerCreateSnapshot": {write, func() any {
			return &structs.ClientCSIControllerCreateSnapshotRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerDeleteSnapshot": {write, func() any {
			return &structs.ClientCSIControllerDeleteSnapshotRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerListSnapshots": {write, func() any {
			return &structs.ClientCSIControllerListSnapshotsRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerListVolumes": {write, func() any {
			return &structs.ClientCSIControllerListVolumesRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerAttachVolume": {write, func() any {
			return &structs.ClientCSIControllerAttachVolumeRequest{NodeID: "node-1"}
		}},
		"ClientCSI.ControllerDetachVolume": {write, func() any {
			return &structs.ClientCSIControllerDetachVolumeRequest{NodeID: "node-1"}
		}},
		"ClientCSI.NodeDetachVolume": {write, func() any {
			return &structs.ClientCSINodeDetachVolumeRequest{NodeID: "node-1"}
		}},
		"ClientCSI.NodeExpandVolume": {write, func() any {
			return &structs.ClientCSINodeExpandVolumeRequest{NodeID: "node-1"}
		}},

		"Keyring.List":   {read, func() any { return &structs.KeyringListRequest{} }},
		"Keyring.Rotate": {write, func() any { return &structs.KeyringRotateRequest{} }},
		// Root key material: another server only (with ACLs on and no
		// TLS, a management token).
		"Keyring.GetKey": {write, func() any { return &structs.KeyringGetKeyRequest{KeyID: "missing"} }},
		"Keyring.PutKey": {write, func() any { return &structs.KeyringPutKeyRequest{} }},
	}
}

// walkNodes numbers the new nodes Node.Register makes in the walks.
var walkNodes atomic.Int64

// walkSeed makes the objects the walk's requests name: node-1 (with the
// test node secret) running hostpath, the volume "data" and the alloc
// "alloc-1" on node-1.
func walkSeed(t *testing.T, s *Server, mgmt string) {
	t.Helper()
	must.NoError(t, callAs(t, s, testNodeSecret, "Node.Register", &structs.NodeRegisterRequest{
		Node: statetest.NodeWithPlugin("node-1", "hostpath", false, true, true)}, &structs.NodeUpdateResponse{}))
	must.NoError(t, callAs(t, s, mgmt, "CSIVolume.Register", &structs.CSIVolumeRegisterRequest{
		Volumes: []*structs.CSIVolume{statetest.Volume("data", "hostpath")}}, &structs.CSIVolumeRegisterResponse{}))
	_, _, err := raftApply[any](s, structs.PlanApplyRequestType, &structs.PlanApplyRequest{
		Allocs: []*structs.Allocation{volumeAlloc("alloc-1", "node-1", structs.DefaultNamespace, 0, "data", false)}})
	must.NoError(t, err)
}

// TestRPCTable_MatchesWalk: who the production table lets call each
// method is who the walk, written apart from it, expects: a row weakened
// (or tightened) by mistake fails here.
func TestRPCTable_MatchesWalk(t *testing.T) {
	rules := walkRules()
	for m := range rpcMethods {
		rule, ok := rules[m]
		must.True(t, ok, must.Sprintf("%s has no row in walkRules", m))
		must.EqOp(t, rule.access, accessOf(m), must.Sprintf("%s: the table's reach is not the walk's", m))
	}
}

// TestRPCTable_OpenMethods: the methods anyone may call are these and no
// other, so that a row opened by mistake fails here, not only in review.
func TestRPCTable_OpenMethods(t *testing.T) {
	want := []string{"ACL.Bootstrap", "ACL.WhoAmI", "Status.HasNodeConn", "Status.Leader", "Status.Peers", "Status.ReadIndex"}
	var got []string
	for m, row := range rpcMethods {
		if row.guard.reachOf() == reachAnyone {
			got = append(got, m)
		}
	}
	sort.Strings(got)
	must.Eq(t, want, got)
	for m, row := range rpcMethods {
		if row.guard.kind == guardHandler {
			must.StrNotEqFold(t, "", row.guard.who, must.Sprintf("%s: a guard in the handler says who passes", m))
		}
	}
}

// TestACL_EndpointWalk calls every method the server serves (listed by
// the RPC server itself, not by this test) with no token, a read-only
// token and a management token on an ACL-enabled server, and checks who
// is refused with PermissionDenied: a method without a check, or one the
// table does not classify, fails here.
func TestACL_EndpointWalk(t *testing.T) {
	s, mgmt := aclServer(t)
	walkSeed(t, s, mgmt)
	readOnly := makeToken(t, s, mgmt, "readonly", readOnlyRules)
	var self structs.ACLTokenGetResponse
	must.NoError(t, callAs(t, s, readOnly, "ACL.WhoAmI", &structs.ACLTokenGetRequest{}, &self))
	must.NotNil(t, self.Token)

	rules := walkRules()
	rules["ACL.GetToken"] = walkRule{read, func() any { return &structs.ACLTokenGetRequest{AccessorID: self.Token.AccessorID} }}

	methods := s.rpcServer.Methods()
	must.SliceNotEmpty(t, methods)
	var unclassified []string
	for _, m := range methods {
		if _, ok := rules[m]; !ok {
			unclassified = append(unclassified, m)
		}
	}
	must.SliceEmpty(t, unclassified, must.Sprintf("methods served without a row in walkRules (decide their check and add one): %v", unclassified))
	served := map[string]bool{}
	for _, m := range methods {
		served[m] = true
	}
	var stale []string
	for m := range rules {
		if !served[m] {
			stale = append(stale, m)
		}
	}
	sort.Strings(stale)
	must.SliceEmpty(t, stale, must.Sprintf("walkRules rows for methods the server does not serve: %v", stale))

	callers := []struct {
		name  string
		token string
		// denied says whether the caller must be refused by access.
		denied func(access) bool
	}{
		{"anonymous", "", func(a access) bool { return a != open }},
		{"read-only", readOnly, func(a access) bool { return a == write }},
		{"management", mgmt, func(access) bool { return false }},
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range methods {
				rule := rules[m]
				err := callAs(t, s, c.token, m, rule.args(), nil)
				denied := errors.Is(err, structs.ErrPermissionDenied)
				if want := c.denied(rule.access); want != denied {
					t.Errorf("%s as %s (%s): PermissionDenied = %v, want %v (error: %v)", m, c.name, rule.access, denied, want, err)
				}
			}
		})
	}
}

// TestACL_EndpointWalk_DisabledLetsOperatorsIn: with ACLs off no method
// refuses a caller for want of a token, except the client's own calls,
// which need the node's secret whatever the ACL setting.
func TestACL_EndpointWalk_DisabledLetsOperatorsIn(t *testing.T) {
	s := testServer(t)
	walkSeed(t, s, "")
	clientOnly := map[string]bool{
		"Node.Register": true, "Node.UpdateStatus": true, "Node.UpdateFingerprint": true, "Node.UpdateAlloc": true,
		"Node.GetClientAllocs": true, "CSIVolume.Publish": true, "CSIVolume.NodeExpand": true,
	}
	rules := walkRules()
	rules["ACL.GetToken"] = walkRule{read, func() any { return &structs.ACLTokenGetRequest{AccessorID: "missing"} }}
	for _, m := range s.rpcServer.Methods() {
		rule, ok := rules[m]
		must.True(t, ok, must.Sprintf("%s has no row in walkRules", m))
		err := callAs(t, s, "", m, rule.args(), nil)
		denied := errors.Is(err, structs.ErrPermissionDenied)
		must.Eq(t, clientOnly[m], denied, must.Sprintf("%s with ACLs off and no token: %v", m, err))
	}
}
