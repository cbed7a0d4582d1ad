package spec

// kind is the type of a value in the tree.
type kind int

const (
	kindNull kind = iota
	kindString
	kindNumber
	kindBool
	kindList
	kindObject
)

// node is one value read from HCL or JSON, with the line it starts on.
type node struct {
	kind   kind
	line   int
	str    string   // kindString: the value; kindNumber: its decimal text
	b      bool     // kindBool
	items  []*node  // kindList
	fields []*field // kindObject, in source order; HCL blocks may repeat a name
	block  bool     // an HCL block rather than an object value
	labels []string // an HCL block's labels; no block of a volume spec takes any
}

// field is one name = value (or block) in an object.
type field struct {
	name string
	line int
	val  *node
}

// describe says what a value is, for "must be X, not Y" errors.
func (n *node) describe() string {
	switch n.kind {
	case kindString:
		return "a string"
	case kindNumber:
		return "a number"
	case kindBool:
		return "a bool"
	case kindList:
		return "a list"
	case kindObject:
		if n.block {
			return "a block"
		}
		return "an object"
	}
	return "null"
}
