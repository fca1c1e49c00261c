//go:build !amd64 || purego

package zstdlit

// parse is parseWindow where there is no assembly for it; the sequences
// section works out the codes (no counts).
func (e *windowEncoder) parse(src []byte, start, end, maxOff int, opt WindowOptions) *seqCounts {
	e.parseWindow(src, start, end, maxOff, opt)
	return nil
}
