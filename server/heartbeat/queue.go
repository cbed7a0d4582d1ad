package heartbeat

import (
	"container/heap"
	"time"
)

// timer is one node's deadline and its place in the queue.
type timer struct {
	node  string
	at    time.Time
	index int // in the queue; 0 is the earliest
}

// queue is a heap of timers by deadline (container/heap), so that a reset
// costs O(log n) and the loop waits for one deadline only.
type queue []*timer

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}

// Push and Pop are container/heap's; use push, pop, fix and remove.
func (q *queue) Push(x any) {
	t := x.(*timer)
	t.index = len(*q)
	*q = append(*q, t)
}

func (q *queue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	t.index = -1
	return t
}

func (q *queue) push(t *timer)   { heap.Push(q, t) }
func (q *queue) pop() *timer     { return heap.Pop(q).(*timer) }
func (q *queue) fix(t *timer)    { heap.Fix(q, t.index) }
func (q *queue) remove(t *timer) { heap.Remove(q, t.index) }
