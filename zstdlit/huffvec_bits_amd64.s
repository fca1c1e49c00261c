//go:build amd64 && !purego

#include "textflag.h"

// func litBitsAVX512(a *litBitsAsm)
//
// For each whole 64 bytes of the literals: every byte's code length from
// the 256-entry table, looked up 128 entries at a time by VPERMT2B (the
// low 7 bits index a pair of 64-byte registers, bit 7 picks the pair),
// summed eight bytes a lane by VPSADBW and kept as their least (a 0 is a
// literal the table cannot code). Needs AVX-512 BW and VBMI.
//
// Registers: SI the literals, CX the bytes left (a multiple of 64), Z16 to
// Z19 the table, Z20 the lanes' sums, Z21 the least, Z22 zero.
TEXT ·litBitsAVX512(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ 0(DI), SI            // lits
	MOVQ 8(DI), CX            // n, a multiple of 64
	MOVQ 16(DI), DX           // nbBits
	VMOVDQU64 0(DX), Z16
	VMOVDQU64 64(DX), Z17
	VMOVDQU64 128(DX), Z18
	VMOVDQU64 192(DX), Z19
	VPXORQ Z20, Z20, Z20
	VPTERNLOGD $0xff, Z21, Z21, Z21 // all ones: the least so far
	VPXORQ Z22, Z22, Z22
	TESTQ CX, CX
	JZ   done

loop:
	VMOVDQU64 (SI), Z0
	VPMOVB2M Z0, K1
	VMOVDQA64 Z16, Z1
	VPERMT2B Z17, Z0, Z1      // lengths of symbols 0-127 by the low 7 bits
	VMOVDQA64 Z18, Z2
	VPERMT2B Z19, Z0, Z2      // of symbols 128-255
	VPBLENDMB Z2, Z1, K1, Z3  // bit 7 picks
	VPMINUB Z3, Z21, Z21
	VPSADBW Z22, Z3, Z4
	VPADDQ Z4, Z20, Z20
	ADDQ $64, SI
	SUBQ $64, CX
	JNZ  loop

done:
	VMOVDQU64 Z20, 24(DI)     // sums
	VMOVDQU64 Z21, 88(DI)     // least
	VZEROUPPER
	RET
