package api

import "github.com/berth-csi/berth/structs"

// Nodes reads client nodes.
type Nodes struct{ c *Client }

// Nodes returns the node endpoints.
func (c *Client) Nodes() *Nodes { return &Nodes{c} }

// List returns the nodes, filtered by q.Prefix.
func (n *Nodes) List(q *QueryOptions) ([]*structs.NodeListStub, *QueryMeta, error) {
	var out []*structs.NodeListStub // a page of them with q.PerPage (QueryMeta.NextToken: the next)
	qm, err := n.c.query("/v1/nodes", nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Info returns one node by its full ID; a missing node is an error that
// matches structs.ErrNotFound.
func (n *Nodes) Info(id string, q *QueryOptions) (*structs.Node, *QueryMeta, error) {
	var out structs.Node
	qm, err := n.c.query("/v1/node/"+escape(id), nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}
