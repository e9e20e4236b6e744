package placement

// changeLog lists, in order, the nodes Commit and Release changed, so that a policy that
// keeps its own view of a state reads what changed instead of looking at every node. A
// state gets a new log whenever its nodes may have changed otherwise (NewState, Reindex):
// a reader still holding the old one starts over. The log keeps its newest entries only;
// a reader that fell further behind starts over too, which costs no more than reading
// that many entries would.
type changeLog struct {
	nodes []int32
	start int // position of nodes[0] since the log began
}

// logCursor is where one reader has read a log to.
type logCursor struct {
	log *changeLog
	pos int
}

// currentLog is s's log, made on first use for a State not made by NewState.
func (s *State) currentLog() *changeLog {
	if s.log == nil {
		s.log = &changeLog{}
	}
	return s.log
}

func (s *State) logChange(n int) {
	l := s.currentLog()
	l.nodes = append(l.nodes, int32(n))
	if keep := max(len(s.Nodes), 1024); len(l.nodes) > 2*keep {
		drop := len(l.nodes) - keep
		l.nodes = append(l.nodes[:0], l.nodes[drop:]...)
		l.start += drop
	}
}

// changedSince returns the nodes changed since cur, oldest first and possibly repeated,
// and moves cur past them. ok is false when cur cannot say what changed (another log,
// or entries dropped since): the reader must look at every node. The slice is the log's
// own; read it before the next Commit or Release.
func (s *State) changedSince(cur *logCursor) (nodes []int32, ok bool) {
	l := s.currentLog()
	end := l.start + len(l.nodes)
	if cur.log != l || cur.pos < l.start || cur.pos > end {
		cur.log, cur.pos = l, end
		return nil, false
	}
	nodes = l.nodes[cur.pos-l.start:]
	cur.pos = end
	return nodes, true
}
