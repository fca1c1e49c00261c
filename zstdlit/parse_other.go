//go:build !amd64 || purego

package zstdlit

// parse is parseWindow where there is no assembly for it.
func (e *windowEncoder) parse(src []byte, start, end, maxOff int, opt WindowOptions) {
	e.parseWindow(src, start, end, maxOff, opt)
}
