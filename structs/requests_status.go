package structs

// RaftServer is one member of the raft configuration.
type RaftServer struct {
	ID      string
	Node    string
	Address string
	Leader  bool
	Voter   bool
}

// RaftConfigurationResponse answers Operator.RaftGetConfiguration.
type RaftConfigurationResponse struct {
	Servers []*RaftServer
	Index   uint64
}

// ServerMember is one server as gossip sees it.
type ServerMember struct {
	Name    string
	Addr    string
	Port    uint16
	Status  string
	Tags    map[string]string
	Leader  bool
	RPCAddr string
}

// ServerMembersResponse answers Status.Members.
type ServerMembersResponse struct {
	Members []*ServerMember
}

// GenericRequest is a request with nothing but query options.
type GenericRequest struct {
	QueryOptions
}
