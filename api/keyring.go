package api

import (
	"net/http"
	"net/url"

	"github.com/berth-csi/berth/structs"
)

// Keyring reads and rotates the servers' root keys, which seal secrets at
// rest. Only the keys' metadata is ever returned: their material never
// leaves the servers.
type Keyring struct{ c *Client }

// Keyring returns the root keyring endpoints.
func (c *Client) Keyring() *Keyring { return &Keyring{c} }

// List returns the root keys (ID, state, create time), oldest first.
func (k *Keyring) List(q *QueryOptions) ([]*structs.RootKeyMeta, *QueryMeta, error) {
	var out []*structs.RootKeyMeta
	qm, err := k.c.query("/v1/operator/keyring/keys", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Rotate makes a new active root key; the old ones stay to decrypt what
// they sealed. With full, the servers seal every volume's secrets again
// under the new key now, and the answer says how many.
func (k *Keyring) Rotate(full bool) (*structs.KeyringRotateResponse, *WriteMeta, error) {
	var params url.Values
	if full {
		params = url.Values{"full": {"true"}}
	}
	var out structs.KeyringRotateResponse
	wm, err := k.c.write(http.MethodPut, "/v1/operator/keyring/rotate", params, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, wm, nil
}
