package pipeline

import "errors"

// InputError marks a fault of the acquisition itself (manifest, raw file):
// retrying cannot help, and the daemon moves such input to failed/.
type InputError struct {
	Err error
}

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func badInput(err error) error { return &InputError{Err: err} }

// IsInputError reports whether err is, or wraps, an InputError.
func IsInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// SizeError is an InputError for a raw file whose size disagrees with the
// manifest's shape. The daemon rechecks these until the size is stable:
// the file may still be growing.
type SizeError struct {
	File      string
	Size      int64
	Want      int64 // 0 when dim 0 is inferred
	FrameSize int64
}

func (e *SizeError) Error() string {
	switch {
	case e.Size == 0:
		return "raw file " + e.File + " is empty"
	case e.Want == 0:
		return "raw file " + e.File + ": " + itoa(e.Size) + " bytes is not a whole number of " + itoa(e.FrameSize) + "-byte frames"
	case e.Size < e.Want:
		return "raw file " + e.File + " is truncated: " + itoa(e.Size) + " bytes, the manifest's shape needs " + itoa(e.Want)
	default:
		return "raw file " + e.File + " is oversized: " + itoa(e.Size) + " bytes, the manifest's shape needs " + itoa(e.Want)
	}
}
