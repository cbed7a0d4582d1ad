package command

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var volumeDetachCommand = &command{
	name:     "volume detach",
	synopsis: "Release a node's claims on a CSI volume",
	help: `[options] <volume> <node>

  Release every claim a node holds on a volume: the servers take each
  through the node's unpublish and unstage and the controller's unpublish,
  then free it, retrying as they do for any release. Use it for a node
  that is gone for good, or a claim that is stuck. The volume may be given
  by a unique prefix of its ID; the node by a unique prefix of its ID,
  among the nodes and the nodes the volume's claims name (a node that has
  left the cluster is no longer listed).

  The command returns once the release has started; "berth volume status
  <volume>" shows each claim until it is freed, with its last error.
`,
	run: runVolumeDetach,
}

func runVolumeDetach(ctx context.Context, m *meta, args []string) int {
	pos, status, ok := m.parse(m.flagSet(), args, 2, 2)
	if !ok {
		return status
	}
	c, volID, code := volumeStatus.connect(ctx, m, pos[0])
	if c == nil {
		return code
	}
	vol, _, err := c.CSIVolumes().Info(volID, nil)
	if err != nil {
		return m.fail("%s", apiError("read volume "+strconv.Quote(volID), err))
	}
	nodeID, err := detachNode(c, vol, pos[1])
	if err != nil {
		return m.fail("%s", err)
	}
	released, _, err := c.CSIVolumes().Detach(volID, nodeID)
	if err != nil {
		return m.fail("%s", apiError(fmt.Sprintf("detach volume %q from node %q", volID, nodeID), err))
	}
	if len(released) == 0 {
		fmt.Fprintf(m.stdout, "Volume %q has no claims on node %q to release\n", volID, shortID(nodeID, false))
		return exitOK
	}
	fmt.Fprint(m.stdout, releasingLine(volID, nodeID, released))
	fmt.Fprintf(m.stdout, "\"berth volume status %s\" shows each claim until it is freed\n", volID)
	return exitOK
}

// releasingLine says which allocations' claims a detach releases, in
// the order of their IDs (the servers answer in no order).
func releasingLine(volID, nodeID string, released []string) string {
	short := make([]string, len(released))
	for i, id := range released {
		short[i] = shortID(id, false)
	}
	sort.Strings(short)
	return fmt.Sprintf("Releasing the claims of volume %q on node %q: %s %s\n", volID, shortID(nodeID, false),
		pluralWord(len(released), "allocation"), strings.Join(short, ", "))
}

// detachNode resolves a node ID prefix among the nodes and the nodes the
// volume's claims name: a node gone from the cluster is the usual reason
// to detach.
func detachNode(c *api.Client, vol *structs.CSIVolume, prefix string) (string, error) {
	nodes, _, err := c.Nodes().List(&api.QueryOptions{Prefix: prefix})
	if err != nil {
		return "", errors.New(apiError("look up node "+strconv.Quote(prefix), err))
	}
	seen := map[string]bool{}
	var ids []string
	add := func(id string) {
		if id != "" && !seen[id] && strings.HasPrefix(id, prefix) {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, n := range nodes {
		add(n.ID)
	}
	for _, claims := range []map[string]*structs.CSIVolumeClaim{vol.ReadClaims, vol.WriteClaims, vol.PastClaims} {
		for _, cl := range claims {
			if cl != nil {
				add(cl.NodeID)
			}
		}
	}
	sort.Strings(ids)
	return resolve("node", "berth node status", prefix, ids)
}

// pluralWord is the noun for a count: "allocation", "allocations".
func pluralWord(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
