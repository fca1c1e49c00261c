//go:build amd64 && !purego

#include "textflag.h"

// huffWideAsm's fields.
#define W_WP 0
#define W_ACC 8
#define W_NB 16
#define W_LITS 24
#define W_N 32
#define W_H 40
#define W_WRITTEN 48
#define W_SCRATCH 56 // two areas of 256 bytes

// huffEnc's tables, from W_H.
#define H_NBBITS 0
#define H_CODE64 768
#define H_LO 2816
#define H_HI 3072

// LOOKUP puts in dst the bytes of the 256-entry table in t0…t3 for the
// bytes of Z0, K1 holding their bit 7. Clobbers Z1, Z2.
#define LOOKUP(t0, t1, t2, t3, dst) \
	VMOVDQA64 t0, Z1 \
	VPERMT2B t1, Z0, Z1 \
	VMOVDQA64 t2, Z2 \
	VPERMT2B t3, Z0, Z2 \
	VPBLENDMB Z2, Z1, K1, dst

// PAIR joins the codes (c) and lengths (l) of two literals a dword, the
// later literal's (the high word) first, as the stream takes them: c =
// c_hi | c_lo << l_hi, l = l_hi + l_lo. Clobbers Z11-Z14.
#define PAIR(c, l) \
	VPSRLD $16, c, Z11 \
	VPANDD Z23, c, Z12 \
	VPSRLD $16, l, Z13 \
	VPANDD Z23, l, Z14 \
	VPSLLVD Z13, Z12, Z12 \
	VPORD Z12, Z11, c \
	VPADDD Z14, Z13, l

// QUAD joins two pairs a qword the same way: at most 44 bits of four
// codes of at most 11. Clobbers Z11-Z14.
#define QUAD(c, l) \
	VPSRLQ $32, c, Z11 \
	VPANDQ Z21, c, Z12 \
	VPSRLQ $32, l, Z13 \
	VPANDQ Z21, l, Z14 \
	VPSLLVQ Z13, Z12, Z12 \
	VPORQ Z12, Z11, c \
	VPADDQ Z14, Z13, l

// PUT adds the quad at off(R9) (its length at off+128) to the accumulator
// and writes the accumulator's whole bytes, keeping under 8 bits pending.
// Clobbers DX, R11.
#define PUT(off) \
	MOVQ off(R9), R11 \
	SHLXQ CX, R11, R11 \
	ORQ R11, AX \
	ADDQ off+128(R9), CX \
	FLUSH

#define FLUSH \
	MOVQ AX, (R8) \
	MOVQ CX, DX \
	SHRQ $3, DX \
	ADDQ DX, R8 \
	SHLQ $3, DX \
	SHRXQ DX, AX, AX \
	ANDQ $7, CX

// QUADS makes the quads of the 64 literals below BX and stores them at
// off(R9), their lengths at off+128(R9). Clobbers Z0-Z14, K1.
#define QUADS(off) \
	VMOVDQU64 -64(SI)(BX*1), Z0 \
	VPMOVB2M Z0, K1 \
	LOOKUP(Z16, Z17, Z18, Z19, Z3) \
	LOOKUP(Z24, Z25, Z26, Z27, Z5) \
	LOOKUP(Z28, Z29, Z30, Z31, Z6) \
	VPUNPCKLBW Z6, Z5, Z7 \
	VPUNPCKHBW Z6, Z5, Z8 \
	VPUNPCKLBW Z22, Z3, Z9 \
	VPUNPCKHBW Z22, Z3, Z10 \
	PAIR(Z7, Z9) \
	PAIR(Z8, Z10) \
	QUAD(Z7, Z9) \
	QUAD(Z8, Z10) \
	VMOVDQU64 Z7, off(R9) \
	VMOVDQU64 Z8, off+64(R9) \
	VMOVDQU64 Z9, off+128(R9) \
	VMOVDQU64 Z10, off+192(R9)

// PUTS adds the 16 quads at off(R9), from quad 15 (literals 60-63 of the
// round) down.
#define PUTS(off) \
	PUT(off+120) \
	PUT(off+112) \
	PUT(off+56) \
	PUT(off+48) \
	PUT(off+104) \
	PUT(off+96) \
	PUT(off+40) \
	PUT(off+32) \
	PUT(off+88) \
	PUT(off+80) \
	PUT(off+24) \
	PUT(off+16) \
	PUT(off+72) \
	PUT(off+64) \
	PUT(off+8) \
	PUT(off+0)

// func encodeLitsWide(a *huffWideAsm)
//
// codeLitsGo's stream, 64 literals a round from the last: their codes and
// lengths looked up by VPERMT2B (as litBits does), joined four to a qword
// in vector registers, then added to the accumulator a qword at a time,
// about three instructions a literal where the byte loop takes eight.
// The literals below the last whole 64 go a byte at a time. Needs BMI2,
// AVX-512 BW and VBMI.
//
// The unpacks work within 128-bit lanes: lane m of the low unpack holds
// literals 16m…16m+7, of the high one 16m+8…16m+15, so quad k (literals
// 4k…4k+3) lies at qword 2m+(r&1) of the low (r < 2) or high (r ≥ 2)
// vector, k = 4m+r; PUT takes them from quad 15 down.
//
// Registers: DI the argument block, SI the literals, BX how many are left,
// R8 where the next word goes, AX the accumulator, CX its bit count, R9
// the scratch quads, R12 the huffEnc; Z16-Z19, Z24-Z27 and Z28-Z31 the
// length, low and high code byte tables, Z21 and Z23 the qword and dword
// low-half masks, Z22 zero.
TEXT ·encodeLitsWide(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ W_WP(DI), R8
	MOVQ W_LITS(DI), SI
	MOVQ W_N(DI), BX
	MOVQ W_H(DI), R12
	LEAQ W_SCRATCH(DI), R9
	XORQ AX, AX
	XORQ CX, CX
	CMPQ BX, $64
	JLT  tail

	VMOVDQU64 H_NBBITS(R12), Z16
	VMOVDQU64 H_NBBITS+64(R12), Z17
	VMOVDQU64 H_NBBITS+128(R12), Z18
	VMOVDQU64 H_NBBITS+192(R12), Z19
	VMOVDQU64 H_LO(R12), Z24
	VMOVDQU64 H_LO+64(R12), Z25
	VMOVDQU64 H_LO+128(R12), Z26
	VMOVDQU64 H_LO+192(R12), Z27
	VMOVDQU64 H_HI(R12), Z28
	VMOVDQU64 H_HI+64(R12), Z29
	VMOVDQU64 H_HI+128(R12), Z30
	VMOVDQU64 H_HI+192(R12), Z31
	VPXORQ Z22, Z22, Z22
	VPTERNLOGD $0xff, Z23, Z23, Z23
	VPSRLQ $32, Z23, Z21          // 0x00000000ffffffff a qword
	VPSRLD $16, Z23, Z23          // 0x0000ffff a dword

	// Round by round, the next 64 literals' quads are made while the
	// last round's go into the accumulator: two scratch areas, so that
	// PUT reads quads stored a round before, not ones still in flight.
	QUADS(0)

group:
	CMPQ BX, $128
	JLT  last
	SUBQ $64, BX
	QUADS(256)
	PUTS(0)
	CMPQ BX, $128
	JLT  last1
	SUBQ $64, BX
	QUADS(0)
	PUTS(256)
	JMP  group

last1:
	PUTS(256)
	SUBQ $64, BX
	VZEROUPPER
	JMP  tail

last:
	PUTS(0)
	SUBQ $64, BX
	VZEROUPPER

tail:
	TESTQ BX, BX
	JZ   done
	MOVBLZX -1(SI)(BX*1), DX
	MOVQ H_CODE64(R12)(DX*8), R11
	SHLXQ CX, R11, R11
	ORQ  R11, AX
	MOVBLZX H_NBBITS(R12)(DX*1), R11
	ADDQ R11, CX
	FLUSH
	DECQ BX
	JMP  tail

done:
	MOVQ R8, DX
	SUBQ W_WP(DI), DX
	MOVQ DX, W_WRITTEN(DI)
	MOVQ AX, W_ACC(DI)
	MOVQ CX, W_NB(DI)
	RET
