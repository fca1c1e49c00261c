//go:build amd64 && !purego

#include "textflag.h"

// Offsets of fseTable's fields (state [512]uint16 after an 8-byte log;
// sym [64]fseSym after it, 8 bytes each: deltaNbBits, deltaFindState).
#define STATE 8
#define SYM 1032

// STATEBITS codes one state: its code from the byte at codes[i] (masked
// with mask) into code, its table at tab(DI), the state in st. It adds
// the state's low k bits to the accumulator (AX) at nb (R15) and moves
// the state on. BMI2's shifts take their counts from any register and
// leave the flags alone, where SHL by CL is two or three µops on Intel
// cores and ties every shift to CX. Clobbers CX, DX, R13.
#define STATEBITS(codes, mask, tab, st, code) \
	MOVQ codes(DI), code \
	MOVBLZX (code)(BX*1), code \
	ANDL $mask, code \
	MOVQ tab(DI), R13 \
	MOVL SYM(R13)(code*8), DX \
	ADDL st, DX \
	SHRL $16, DX \
	ANDL $31, DX \
	BZHIL DX, st, CX \
	SHRXL DX, st, st \
	ADDL (SYM+4)(R13)(code*8), st \
	ANDL $511, st \
	MOVWLZX STATE(R13)(st*2), st \
	SHLXQ R15, CX, CX \
	ORQ CX, AX \
	ADDQ DX, R15

// LENEXTRA adds a length's extra bits to the accumulator: the length at
// off(SI) less the baseline of its code (in R14, below 64) from the
// table base, in as many bits as the table bits gives. Clobbers DX, R13.
#define LENEXTRA(off, base, bits) \
	MOVL off(SI), DX \
	LEAQ base(SB), R13 \
	SUBL (R13)(R14*4), DX \
	SHLXQ R15, DX, DX \
	ORQ DX, AX \
	LEAQ bits(SB), R13 \
	MOVBLZX (R13)(R14*1), R13 \
	ADDQ R13, R15

// FLUSH writes the accumulator's 8 bytes at R8, moves R8 on by its whole
// bytes and keeps the fewer than 8 bits left. Clobbers CX.
#define FLUSH \
	MOVQ AX, (R8) \
	MOVQ R15, CX \
	SHRQ $3, CX \
	ADDQ CX, R8 \
	SHLQ $3, CX \
	SHRXQ CX, AX, AX \
	ANDQ $7, R15

// func encodeSeqsAMD64(a *seqAsm)
//
// Needs BMI2 (codeSeqs asks). Registers: AX the accumulator, R15 its bit
// count, R8 where the next word goes, BX the sequence's index, SI the
// sequence, DI the argument block, R9 R10 R11 the offset, match length
// and literal length states, R12 the offset's code, R14 the code of a
// length; CX DX R13 scratch.
TEXT ·encodeSeqsAMD64(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ 0(DI), R8
	MOVQ 8(DI), AX
	MOVQ 16(DI), R15
	MOVQ 24(DI), SI
	MOVQ 56(DI), BX
	MOVQ 88(DI), R9
	MOVQ 96(DI), R10
	MOVQ 104(DI), R11
	TESTQ BX, BX
	JZ done
	LEAQ (BX)(BX*2), DX
	LEAQ (SI)(DX*4), SI       // past the last sequence

loop:
	DECQ BX
	SUBQ $12, SI
	STATEBITS(48, 31, 64, R9, R12)
	STATEBITS(40, 63, 72, R10, R14)
	STATEBITS(32, 63, 80, R11, R14)

	// The literal length's extra bits (its code still in R14), then
	// the match length's.
	LENEXTRA(0, ·llBase64, ·llBits64)
	FLUSH
	MOVQ 40(DI), R14
	MOVBLZX (R14)(BX*1), R14
	ANDL $63, R14
	LENEXTRA(4, ·mlBase64, ·mlBits64)

	// The offset's extra bits: as many as its code.
	MOVL 8(SI), DX
	BZHIL R12, DX, DX
	SHLXQ R15, DX, DX
	ORQ DX, AX
	ADDQ R12, R15
	FLUSH

	TESTQ BX, BX
	JNZ loop

done:
	MOVQ R8, DX
	SUBQ 0(DI), DX
	MOVQ DX, 112(DI)
	MOVQ AX, 8(DI)
	MOVQ R15, 16(DI)
	MOVQ R9, 88(DI)
	MOVQ R10, 96(DI)
	MOVQ R11, 104(DI)
	RET
