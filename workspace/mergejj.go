package workspace

import (
	"context"
	"errors"
)

func mergeJJ(ctx context.Context, ws *Workspace, opts MergeOptions) (*Merged, error) {
	return nil, errors.New("TODO")
}
