package structs

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

func TestNode_Schedulable(t *testing.T) {
	n := &Node{Status: NodeStatusReady}
	must.True(t, n.Schedulable(), must.Sprint("a node stored before eligibility existed is eligible"))
	n.SchedulingEligibility = NodeSchedulingIneligible
	must.False(t, n.Schedulable())
	n.SchedulingEligibility, n.Status = NodeSchedulingEligible, NodeStatusDown
	must.False(t, n.Schedulable())
	var none *Node
	must.False(t, none.Schedulable())
	must.False(t, none.Draining())
}

func TestNewDrainStrategy_Deadline(t *testing.T) {
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	d := NewDrainStrategy(DrainSpec{Deadline: time.Hour}, at)
	must.Eq(t, at.Add(time.Hour), d.ForceDeadline)
	must.False(t, d.DeadlinePassed(at.Add(59*time.Minute)))
	must.True(t, d.DeadlinePassed(at.Add(time.Hour)))

	none := NewDrainStrategy(DrainSpec{}, at)
	must.True(t, none.ForceDeadline.IsZero())
	must.False(t, none.DeadlinePassed(at.Add(1000*time.Hour)))

	force := NewDrainStrategy(DrainSpec{Deadline: -1}, at)
	must.True(t, force.DeadlinePassed(at), must.Sprint("a negative deadline stops everything at once"))

	c := d.Copy()
	c.IgnoreSystemJobs = true
	must.False(t, d.IgnoreSystemJobs)
}
