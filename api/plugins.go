package api

import (
	"net/http"
	"net/url"

	"github.com/berth-csi/berth/structs"
)

// CSIPlugins reads and deletes CSI plugins.
type CSIPlugins struct{ c *Client }

// CSIPlugins returns the CSI plugin endpoints.
func (c *Client) CSIPlugins() *CSIPlugins { return &CSIPlugins{c} }

func typeCSI() url.Values { return url.Values{"type": []string{"csi"}} }

// List returns the plugins, filtered by q.Prefix.
func (p *CSIPlugins) List(q *QueryOptions) ([]*structs.CSIPluginListStub, *QueryMeta, error) {
	var out []*structs.CSIPluginListStub
	qm, err := p.c.query("/v1/plugins", typeCSI(), &out, q)
	if err != nil {
		return nil, nil, err
	}
	return out, qm, nil
}

// Info returns one plugin with its controller and node instances (a page
// of them with q.PerPage; QueryMeta.NextToken is the next page's); a
// missing plugin is an error that matches structs.ErrNotFound.
func (p *CSIPlugins) Info(id string, q *QueryOptions) (*structs.CSIPlugin, *QueryMeta, error) {
	var out structs.CSIPlugin
	qm, err := p.c.query("/v1/plugin/csi/"+escape(id), nil, &out, q)
	if err != nil {
		return nil, nil, err
	}
	return &out, qm, nil
}

// Delete removes a plugin that no instance, job or volume uses.
func (p *CSIPlugins) Delete(id string) (*WriteMeta, error) {
	return p.c.write(http.MethodDelete, "/v1/plugin/csi/"+escape(id), nil, nil, nil)
}
