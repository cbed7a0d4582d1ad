package integration

import (
	"fmt"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/berth-csi/berth/structs"
)

// TestVolumes_ExternalIDTaken_Hostpath: a storage volume is one berth
// volume at most. A create whose plugin answers with a volume another is
// registered on (the same name: the plugin's idempotency key) is refused
// and leaves that volume alone; so is a register of it under another ID
// or in another namespace.
func TestVolumes_ExternalIDTaken_Hostpath(t *testing.T) {
	c := hostpathCluster(t)
	via := c.Followers()[0]
	first, err := create(t, via, createSpec("data"))
	must.NoError(t, err)
	taken := fmt.Sprintf(`external ID %s of plugin hostpath is already registered as volume "data" in namespace "default"; deregister it first`,
		first.ExternalID)

	second := createSpec("second")
	second.Name = first.Name
	_, err = create(t, via, second)
	must.ErrorIs(t, err, structs.ErrConflict)
	must.ErrorContains(t, err, `volume "second": `+taken)
	must.StrNotContains(t, err.Error(), "delete it at the provider", must.Sprint("the disk is the first volume's"))

	for _, ns := range []string{"default", "prod"} {
		again := createSpec("copy")
		again.Namespace, again.ExternalID = ns, first.ExternalID
		_, err = register(t, via, again)
		must.ErrorIs(t, err, structs.ErrConflict)
		must.ErrorContains(t, err, `volume "copy": `+taken)
	}

	var get structs.CSIVolumeGetResponse
	must.NoError(t, rpc(t, via, "CSIVolume.Get", &structs.CSIVolumeGetRequest{ID: "second"}, &get))
	must.Nil(t, get.Volume)
	got := volume(t, c, "data")
	must.Eq(t, first.ExternalID, got.ExternalID)
	must.True(t, got.Schedulable, must.Sprint("the refused create left the first volume as it was"))
}
