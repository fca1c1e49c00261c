// zstdlit_slot.cuh: how a parse lane writes its segment's sequences,
// packed (pack_seq), to the segment's slot, and its summary word
// (segMeta). Included by zstdlit_parse.cuh inside namespace zl, after the
// parse's constants and zstdlit_repcode.cuh, whose zl_rep_code it calls.

#ifndef ZSPOOL_ZSTDLIT_SLOT_CUH
#define ZSPOOL_ZSTDLIT_SLOT_CUH

// SegmentSeqs is a lane's parse so far: the segment's repeat offsets,
// the sequences and literals it has written, and where its pending
// literals start. Sequences go out four at a time, a 16-byte store to the
// slot and, when one escapes, one to the side slot: each lane stores to a
// segment of its own, so every store of a warp is 32 sectors however few
// bytes it carries. A store a sequence (and a second where its offset
// escapes) sent 6.7 GB through L2 for 1 GiB of dim frames, which kept it
// 64% busy (Nsight Compute, zl_parse2, H100). Side by side with
// that (H100, two rounds, the same bytes): level 1's parse 8.44 -> 7.21 ms
// a GiB on dim frames and 5.65 -> 5.07 on bright cells, level 3's 14.9 ->
// 13.6 on bright cells and 12.7 -> 11.4 on saturated 8-bit frames; pairs
// (8-byte stores) took half of that. Level 1's 8-bit frames, with few
// sequences, 2% slower in the parse (the selects).
struct SegmentSeqs {
	uint32_t hist[3] = {0, 0, 0};
	int known = 0;
	uint32_t nseq = 0, nlit = 0, litStart = 0;
	uint32_t q0 = 0, q1 = 0, q2 = 0, o0 = 0, o1 = 0, o2 = 0; // the sequences of a group not yet stored
	// emit writes the sequence of the match of start..end-1 at offset off,
	// its literals those from litStart: packed to slot, an Offset_Value of
	// kOvEscape and more to side.
	__device__ __forceinline__ void emit(uint32_t *__restrict__ slot, uint32_t *__restrict__ side, uint32_t start,
	                                     uint32_t end, uint32_t off)
	{
		const uint32_t ll = start - litStart;
		const uint32_t ov = zl_rep_code(hist, &known, off, ll == 0);
		const uint32_t q = pack_seq(ll, end - start, ov < kOvEscape ? ov : kOvEscape);
		const uint32_t j = nseq & 3;
		if (j == 3) {
			*reinterpret_cast<uint4 *>(slot + nseq - 3) = make_uint4(q0, q1, q2, q);
			if ((o0 >= kOvEscape) | (o1 >= kOvEscape) | (o2 >= kOvEscape) | (ov >= kOvEscape))
				*reinterpret_cast<uint4 *>(side + nseq - 3) = make_uint4(o0, o1, o2, ov);
		} else {
			q0 = j == 0 ? q : q0;
			q1 = j == 1 ? q : q1;
			q2 = j == 2 ? q : q2;
			o0 = j == 0 ? ov : o0;
			o1 = j == 1 ? ov : o1;
			o2 = j == 2 ? ov : o2;
		}
		nseq++;
		nlit += ll;
		litStart = end;
	}
	// finish stores the sequences still held and returns the segment's
	// summary word (segMeta) once its n bytes are parsed.
	__device__ __forceinline__ uint32_t finish(uint32_t *__restrict__ slot, uint32_t *__restrict__ side, uint32_t n)
	{
		const uint32_t j = nseq & 3, b = nseq - j;
		if (j != 0) {
			slot[b] = q0;
			side[b] = o0;
		}
		if (j > 1) {
			slot[b + 1] = q1;
			side[b + 1] = o1;
		}
		if (j > 2) {
			slot[b + 2] = q2;
			side[b + 2] = o2;
		}
		const uint32_t trail = n - litStart;
		return nseq | (nlit + trail) << 8 | trail << 19;
	}
};

#endif
