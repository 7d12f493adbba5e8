package pids

// ReadProc returns process pid as /proc/PID/stat describes it, zombies included (see State);
// ErrGone when there is no such process.
func ReadProc(pid int) (Proc, error) { return readProc(pid) }
