//go:build cuda

package kernels

import (
	_ "embed"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/zspool/zspool/kernels/internal/layout"
)

// fatbin is zspool.fatbin, built by `make kernels` from zspool.cu.
//
//go:embed zspool.fatbin
var fatbin string

// ErrClosed is returned by calls on a closed Device.
var ErrClosed = errors.New("kernels: device closed")

// Probe lists the GPUs this process can use, or says why there are none.
func Probe() ([]Info, error) {
	var infos []Info
	err := onThread(func() error {
		if err := initError(); err != nil {
			return err
		}
		n, err := cu.NumDevices()
		if err != nil {
			return fmt.Errorf("cuDeviceGetCount: %w", err)
		}
		if n == 0 {
			return errors.New("no CUDA device visible")
		}
		for i := range n {
			info, err := deviceInfo(i)
			if err != nil {
				return err
			}
			infos = append(infos, info)
		}
		return nil
	})
	return infos, err
}

// onThread runs f on a fresh goroutine locked to its OS thread and waits.
func onThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		errc <- f()
	}()
	return <-errc
}

func deviceInfo(ordinal int) (Info, error) {
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return Info{}, fmt.Errorf("GPU %d: %w", ordinal, err)
	}
	info := Info{Ordinal: ordinal, Driver: cu.Version()}
	if info.Name, err = dev.Name(); err != nil {
		return info, fmt.Errorf("GPU %d: name: %w", ordinal, err)
	}
	if info.Major, info.Minor, err = dev.ComputeCapability(); err != nil {
		return info, fmt.Errorf("GPU %d: compute capability: %w", ordinal, err)
	}
	if info.Memory, err = dev.TotalMem(); err != nil {
		return info, fmt.Errorf("GPU %d: memory: %w", ordinal, err)
	}
	if info.SMs, err = dev.Attribute(cu.MultiprocessorCount); err != nil {
		return info, fmt.Errorf("GPU %d: multiprocessors: %w", ordinal, err)
	}
	return info, nil
}

// Device is one GPU's CUDA context with the kernels loaded. CUDA ties a
// context to an OS thread and Go moves goroutines between threads, so one
// goroutine, locked to its thread, owns the context and makes every CUDA
// call; everyone else hands it closures (do).
type Device struct {
	Info  Info
	calls chan func()
	quit  chan struct{}
	done  chan struct{}
	once  sync.Once

	// Owned by the device goroutine.
	ctx cu.CUContext
	fn  functions
	// chunkParts is the CTAs of zl_cseed a chunk: the fewest parts of the
	// chunk table that fit this GPU's shared memory (litChunkParts).
	chunkParts int
}

type functions struct {
	scatter32, scatter64, gather          [5]cu.Function // by log2 of the access size
	keys, scan                            cu.Function
	litSeed, litParse, litSeq             cu.Function
	litSeed3                              cu.Function
	litSeed2, litParse2                   cu.Function // the grid's (zstdlit's Options.Grid 2, from GridPhase)
	litChunkSeed, litParse3               cu.Function
	litOwn3                               cu.Function
	litCompact                            cu.Function
	litPlan, litTree, litFrame, litEncode cu.Function
	litXXH, litChecksum                   cu.Function
	reduce                                [layout.Kinds][layout.Methods]cu.Function
}

// Open creates a context on GPU ordinal and loads the kernels.
func Open(ordinal int) (*Device, error) {
	d := &Device{calls: make(chan func()), quit: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go d.loop(ordinal, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Device) loop(ordinal int, ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(d.done)
	if err := d.setup(ordinal); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case f := <-d.calls:
			f()
		case <-d.quit:
			// Destroying the context frees everything allocated in it.
			_ = d.ctx.Destroy()
			return
		}
	}
}

func (d *Device) setup(ordinal int) error {
	if err := initError(); err != nil {
		return err
	}
	info, err := deviceInfo(ordinal)
	if err != nil {
		return err
	}
	d.Info = info
	dev, _ := cu.GetDevice(ordinal)
	if d.ctx, err = dev.MakeContext(cu.SchedAuto); err != nil {
		return fmt.Errorf("GPU %d: create context: %w", ordinal, err)
	}
	fail := func(err error) error {
		_ = d.ctx.Destroy()
		return err
	}
	mod, err := cu.LoadData(fatbin)
	if err != nil {
		return fail(fmt.Errorf("GPU %d (%s, sm_%d%d): load kernels: %w", ordinal, info.Name, info.Major, info.Minor, err))
	}
	if err := d.loadFunctions(mod); err != nil {
		return fail(err)
	}
	if err := d.raiseSharedLimits(dev); err != nil {
		return fail(fmt.Errorf("GPU %d: %w", ordinal, err))
	}
	return nil
}

// loadFunctions looks up in mod every kernel the device launches.
func (d *Device) loadFunctions(mod cu.Module) error {
	var err error
	get := func(name string) cu.Function {
		if err != nil {
			return cu.Function{}
		}
		var f cu.Function
		if f, err = mod.Function(name); err != nil {
			err = fmt.Errorf("kernel %s: %w", name, err)
		}
		return f
	}
	for i, v := range []int{1, 2, 4, 8, 16} {
		d.fn.scatter32[i] = get(fmt.Sprintf("zs_scatter32_v%d", v))
		d.fn.scatter64[i] = get(fmt.Sprintf("zs_scatter64_v%d", v))
		d.fn.gather[i] = get(fmt.Sprintf("zs_gather_v%d", v))
	}
	d.fn.keys = get("zs_chunk_keys")
	d.fn.scan = get("zs_exclusive_scan")
	d.fn.litSeed = get("zl_seed")
	d.fn.litSeed2 = get("zl_seed2")
	d.fn.litSeed3 = get("zl_seed3")
	d.fn.litParse = get("zl_parse")
	d.fn.litParse2 = get("zl_parse2")
	d.fn.litChunkSeed = get("zl_cseed")
	d.fn.litParse3 = get("zl_parse3")
	d.fn.litOwn3 = get("zl_own3")
	d.fn.litSeq = get("zl_seq")
	d.fn.litCompact = get("zl_compact")
	d.fn.litPlan = get("zl_plan")
	d.fn.litTree = get("zl_tree")
	d.fn.litFrame = get("zl_frame")
	d.fn.litEncode = get("zl_encode")
	d.fn.litXXH = get("zl_xxh")
	d.fn.litChecksum = get("zl_checksum")
	for k := range layout.Kinds {
		for m := range layout.Methods {
			d.fn.reduce[k][m] = get(fmt.Sprintf("zs_reduce_k%d_m%d", k, m))
		}
	}
	return err
}

// raiseSharedLimits lets the kernels whose tables are larger than the
// static 48 KiB a CTA gets (zl_seed's, zl_seed2's, zl_seed3's, zl_parse3's
// and zl_cseed's) take them, and splits zl_cseed's chunk table into as few
// parts as dev's shared memory allows.
func (d *Device) raiseSharedLimits(dev cu.Device) error {
	for _, k := range []struct {
		name  string
		fn    cu.Function
		bytes int
	}{
		{"zl_seed", d.fn.litSeed, litSeed1Shared}, {"zl_seed2", d.fn.litSeed2, litSeed1Shared},
		{"zl_seed3", d.fn.litSeed3, litSeed3Shared}, {"zl_parse3", d.fn.litParse3, litParse3Shared},
	} {
		if err := setMaxDynamicShared(k.fn, k.bytes); err != nil {
			return fmt.Errorf("kernel %s: %w", k.name, err)
		}
	}
	limit, err := sharedOptin(dev)
	if err == nil {
		d.chunkParts, err = litChunkParts(litChunkBits, limit)
	}
	if err == nil {
		err = setMaxDynamicShared(d.fn.litChunkSeed, litChunkPartBytes(litChunkBits, d.chunkParts))
	}
	if err != nil {
		return fmt.Errorf("kernel zl_cseed: %w", err)
	}
	return nil
}

// do runs f on the device goroutine and returns its error.
func (d *Device) do(f func() error) error {
	errc := make(chan error, 1)
	select {
	case d.calls <- func() { errc <- f() }:
		return <-errc
	case <-d.done:
		return ErrClosed
	}
}

// Close destroys the context, and with it every buffer allocated in it.
func (d *Device) Close() error {
	d.once.Do(func() { close(d.quit) })
	<-d.done
	return nil
}

// batchKernels is what one batch shape launches with: its parameters in
// device memory and the kernels its alignment and size call for.
type batchKernels struct {
	p       *layout.Params
	dParams cu.DevicePtr
	scatter cu.Function
	gather  cu.Function
	blocks  int // scatter grid
}

const (
	scatterThreads = 256
	scanThreads    = 1024
	// scatterBlocksPerSM bounds the scatter's grid-stride grid: enough
	// resident warps to keep memory busy, few enough that each thread
	// loops a while.
	scatterBlocksPerSM = 16
)

// prepare uploads a batch shape's parameters. On the device goroutine.
func (d *Device) prepare(p *layout.Params) (*batchKernels, error) {
	enc := p.Encode()
	dp, err := cu.MemAlloc(int64(len(enc)))
	if err != nil {
		return nil, fmt.Errorf("allocate kernel parameters: %w", err)
	}
	if err := cu.MemcpyHtoD(dp, unsafe.Pointer(&enc[0]), int64(len(enc))); err != nil {
		_ = cu.MemFree(dp)
		return nil, fmt.Errorf("upload kernel parameters: %w", err)
	}
	bk := &batchKernels{p: p, dParams: dp, gather: d.fn.gather[bits.TrailingZeros64(p.GatherVec)]}
	if p.Wide {
		bk.scatter = d.fn.scatter64[bits.TrailingZeros32(p.Vec)]
	} else {
		bk.scatter = d.fn.scatter32[bits.TrailingZeros32(p.Vec)]
	}
	bk.blocks = int(min(ceilDiv(p.TotalVecs, scatterThreads), uint64(d.Info.SMs*scatterBlocksPerSM)))
	return bk, nil
}

// scatter launches the scatter of the raw batch at in into the chunk
// layout at out, setting nonfill (zeroed here) per chunk. On the device
// goroutine.
func (d *Device) scatter(s cu.Stream, bk *batchKernels, in, out, nonfill cu.DevicePtr) error {
	if err := cu.MemsetD32Async(nonfill, 0, int64(bk.p.NChunks), s); err != nil {
		return fmt.Errorf("clear fill flags: %w", err)
	}
	if err := bk.scatter.Launch(bk.blocks, 1, 1, scatterThreads, 1, 1, 0, s, args(bk.dParams, in, out, nonfill)); err != nil {
		return fmt.Errorf("launch scatter: %w", err)
	}
	return nil
}

// aggregate launches the shard-order permutation of the chunk sizes
// (keyOf, sizes), their exclusive scan (offsets, one past the keys for the
// total) and the gather of the present chunks from layout into out. The
// scan and gather wait for before first (the previous user of offsets and
// out). With lit, the chunks are zstd-encoded on the way: their frames'
// sizes replace the chunk sizes before the scan, and the encoder writes
// the frames where the gather would have put the chunks; compStart, when
// given, is recorded where the encoder's work begins. On the device
// goroutine.
func (d *Device) aggregate(s cu.Stream, bk *batchKernels, lit *litScratch, layout, nonfill, keyOf, sizes, offsets, out cu.DevicePtr,
	before cu.Event, compStart *cu.Event) error {
	p := bk.p
	if err := cu.MemsetD32Async(sizes, 0, int64(2*p.Keys), s); err != nil {
		return fmt.Errorf("clear sizes: %w", err)
	}
	blocks := int(min(ceilDiv(p.NChunks, scatterThreads), 1024))
	if err := d.fn.keys.Launch(blocks, 1, 1, scatterThreads, 1, 1, 0, s, args(bk.dParams, nonfill, keyOf, sizes)); err != nil {
		return fmt.Errorf("launch chunk keys: %w", err)
	}
	if compStart != nil {
		if err := compStart.Record(s); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	}
	if lit != nil {
		if err := d.litSizes(s, lit, layout, int64(p.ChunkBytes), int64(p.NChunks), nonfill, keyOf, sizes); err != nil {
			return err
		}
	}
	if before != (cu.Event{}) {
		if err := s.Wait(before, 0); err != nil {
			return fmt.Errorf("wait for the buffers' last copy: %w", err)
		}
	}
	n := p.Keys
	if err := d.fn.scan.Launch(1, 1, 1, scanThreads, 1, 1, 0, s, args(sizes, cu.DevicePtr(n), offsets)); err != nil {
		return fmt.Errorf("launch scan: %w", err)
	}
	if lit != nil {
		return d.litWrite(s, lit, layout, int64(p.ChunkBytes), int64(p.NChunks), keyOf, offsets, out)
	}
	perChunk := p.ChunkBytes / p.GatherVec
	gx := int(min(ceilDiv(perChunk, scatterThreads), 1024))
	gy := int(min(p.NChunks, 65535))
	if err := bk.gather.Launch(gx, gy, 1, scatterThreads, 1, 1, 0, s, args(bk.dParams, layout, keyOf, offsets, out)); err != nil {
		return fmt.Errorf("launch gather: %w", err)
	}
	return nil
}

// reduceKernel is one pyramid level's reduction: its parameters in device
// memory and the kernel of its element kind and method.
type reduceKernel struct {
	r       *layout.Reduce
	dParams cu.DevicePtr
	fn      cu.Function
}

// prepareReduce uploads a level's reduction parameters. On the device
// goroutine.
func (d *Device) prepareReduce(r *layout.Reduce) (*reduceKernel, error) {
	enc := r.Encode()
	dp, err := cu.MemAlloc(int64(len(enc)))
	if err != nil {
		return nil, fmt.Errorf("allocate reduce parameters: %w", err)
	}
	if err := cu.MemcpyHtoD(dp, unsafe.Pointer(&enc[0]), int64(len(enc))); err != nil {
		_ = cu.MemFree(dp)
		return nil, fmt.Errorf("upload reduce parameters: %w", err)
	}
	return &reduceKernel{r: r, dParams: dp, fn: d.fn.reduce[r.Kind][r.Method]}, nil
}

// reduceThreads is the reduce kernels' block size (their launch bound).
const reduceThreads = 256

// reduce launches nOut output frames of a level into dst, from the
// sequence (pend, when hasPending) followed by the frames at src, nz
// contributors along dim 0 each. On the device goroutine.
func (d *Device) reduce(s cu.Stream, rk *reduceKernel, dst, pend, src cu.DevicePtr, hasPending bool, nOut, nz int64) error {
	if nOut < 1 {
		return nil
	}
	gx := int(min(ceilDiv(rk.r.OutElems, reduceThreads), 1<<16))
	gy := int(min(uint64(nOut), 65535))
	h := cu.DevicePtr(0)
	if hasPending {
		h = 1
	}
	if err := rk.fn.Launch(gx, gy, 1, reduceThreads, 1, 1, 0, s, args(rk.dParams, dst, pend, src, h, cu.DevicePtr(nOut), cu.DevicePtr(nz))); err != nil {
		return fmt.Errorf("launch reduce: %w", err)
	}
	return nil
}

// args packs 8-byte kernel arguments the way cu.Function.Launch takes them.
func args(vals ...cu.DevicePtr) []unsafe.Pointer {
	ps := make([]unsafe.Pointer, len(vals))
	for i := range vals {
		ps[i] = unsafe.Pointer(&vals[i])
	}
	return ps
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }
