package check

// write and read build operations for synthetic histories.
func write(client int, kind Kind, vol string, in Value, outcome Outcome, call, ret int64) Operation {
	return Operation{Client: client, Kind: kind, VolumeID: vol, Input: in, Outcome: outcome, Call: call, Return: ret}
}

func read(client int, vol string, outcome Outcome, out Value, call, ret int64) Operation {
	return Operation{Client: client, Kind: KindRead, VolumeID: vol, Outcome: outcome, Output: out, Call: call, Return: ret}
}

var (
	v1  = Value{Immutable: "ext-1", Mutable: "rw"}
	v1b = Value{Immutable: "ext-1", Mutable: "ro"}
	v2  = Value{Immutable: "ext-2", Mutable: "rw"}
)
