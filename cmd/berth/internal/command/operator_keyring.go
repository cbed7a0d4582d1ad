package command

import (
	"context"
	"fmt"

	"github.com/berth-csi/berth/api"
	"github.com/berth-csi/berth/structs"
)

var operatorKeyringListCommand = &command{
	name:     "operator root keyring list",
	synopsis: "List the root keys that encrypt secrets at rest",
	help: `[options]

  List the servers' root keys, oldest first: their IDs, states and when
  they were made. The active key encrypts new secrets (volume secrets);
  inactive keys are kept to decrypt what they encrypted. Key material
  never leaves the servers' data dirs but to another server.

List Options:

  -json
    Print the API's JSON.
`,
	run: runKeyringList,
}

func runKeyringList(ctx context.Context, m *meta, args []string) int {
	return runRead(ctx, m, args, readSpec[[]*structs.RootKeyMeta]{
		endpoint: "/v1/operator/keyring/keys",
		doing:    "list root keys",
		get: func(c *api.Client) ([]*structs.RootKeyMeta, error) {
			keys, _, err := c.Keyring().List(nil)
			return keys, err
		},
		print: (*meta).rootKeys,
	})
}

func (m *meta) rootKeys(keys []*structs.RootKeyMeta, _ bool) {
	rows := make([][]string, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, []string{k.KeyID, string(k.State), formatTime(k.CreateTime)})
	}
	table(m.stdout, []string{"Key", "State", "Create Time"}, rows)
}

var operatorKeyringRotateCommand = &command{
	name:     "operator root keyring rotate",
	synopsis: "Make a new root key to encrypt secrets with",
	help: `[options]

  Make a new active root key. The old keys stay, inactive, to decrypt the
  secrets they encrypted; a volume's secrets move to the new key on its
  next write, or now with -full.

Rotate Options:

  -full
    Also encrypt every volume's secrets again with the new key now.

  -json
    Print the API's JSON.
`,
	run: runKeyringRotate,
}

func runKeyringRotate(ctx context.Context, m *meta, args []string) int {
	fs := m.flagSet()
	full := fs.Bool("full", false, "")
	asJSON := fs.Bool("json", false, "")
	if _, status, ok := m.parse(fs, args, 0, 0); !ok {
		return status
	}
	c, err := m.client(ctx)
	if err != nil {
		return m.fail("%v", err)
	}
	resp, _, err := c.Keyring().Rotate(*full)
	if err != nil {
		return m.fail("%s", apiError("rotate the root key", err))
	}
	if *asJSON {
		return m.printValue(resp)
	}
	if resp.Key == nil {
		return m.fail("rotate the root key: the servers answered without the new key")
	}
	m.rootKeys([]*structs.RootKeyMeta{resp.Key}, false)
	if *full {
		fmt.Fprintf(m.stdout, "Encrypted the secrets of %d %s again with the new key\n", resp.Reencrypted, pluralWord(resp.Reencrypted, "volume"))
	}
	return exitOK
}
