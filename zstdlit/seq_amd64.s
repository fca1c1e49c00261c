//go:build amd64 && !purego

#include "textflag.h"

// Offsets of fseTable's fields (state [512]uint16 after an 8-byte log;
// sym [64]fseSym after it, 8 bytes each: deltaNbBits, deltaFindState).
#define STATE 8
#define SYM 1032

// STATEBITS codes one state: its code from the byte at codes[i] (masked
// with mask), its table at tab(DI), the state in st. It adds the state's
// low k bits to the accumulator (AX) at nb (R15) and moves the state on.
// Clobbers CX, DX, R12, R13, R14.
#define STATEBITS(codes, mask, tab, st) \
	MOVQ codes(DI), R12 \
	MOVBLZX (R12)(BX*1), R12 \
	ANDL $mask, R12 \
	MOVQ tab(DI), R13 \
	MOVL SYM(R13)(R12*8), CX \
	ADDL st, CX \
	SHRL $16, CX \
	ANDL $31, CX \
	LEAQ ·lowMask(SB), R14 \
	MOVL (R14)(CX*4), DX \
	ANDL st, DX \
	SHRL CX, st \
	ADDL (SYM+4)(R13)(R12*8), st \
	ANDL $511, st \
	MOVWLZX STATE(R13)(st*2), st \
	MOVL CX, R14 \
	MOVQ R15, CX \
	SHLQ CX, DX \
	ORQ DX, AX \
	ADDQ R14, R15

// LENEXTRA adds a length's extra bits to the accumulator: its code from
// the byte at codes[i] (masked to 63), the length at off(SI)(R13*4), R13
// being 3i, less the code's baseline from the table base, in as many bits
// as the table bits gives. Clobbers CX, DX, R12, R14.
#define LENEXTRA(codes, off, base, bits) \
	MOVQ codes(DI), R12 \
	MOVBLZX (R12)(BX*1), R12 \
	ANDL $63, R12 \
	MOVL off(SI)(R13*4), DX \
	LEAQ base(SB), R14 \
	SUBL (R14)(R12*4), DX \
	MOVQ R15, CX \
	SHLQ CX, DX \
	ORQ DX, AX \
	LEAQ bits(SB), R14 \
	MOVBLZX (R14)(R12*1), R14 \
	ADDQ R14, R15

// FLUSH writes the accumulator's 8 bytes at R8, moves R8 on by its whole
// bytes and keeps the fewer than 8 bits left. Clobbers CX.
#define FLUSH \
	MOVQ AX, (R8) \
	MOVQ R15, CX \
	SHRQ $3, CX \
	ADDQ CX, R8 \
	MOVQ R15, CX \
	ANDL $56, CX \
	SHRQ CX, AX \
	ANDQ $7, R15

// func encodeSeqsAMD64(a *seqAsm)
//
// Registers: AX the accumulator, R15 its bit count, R8 where the next
// word goes, BX the sequence, SI the sequences, DI the argument block,
// R9 R10 R11 the offset, match length and literal length states; CX the
// shift count, DX R12 R13 R14 scratch.
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

loop:
	DECQ BX
	STATEBITS(48, 31, 64, R9)
	STATEBITS(40, 63, 72, R10)
	STATEBITS(32, 63, 80, R11)

	// The literal length's extra bits, then the match length's.
	LEAQ (BX)(BX*2), R13
	LENEXTRA(32, 0, ·llBase64, ·llBits64)
	FLUSH
	LENEXTRA(40, 4, ·mlBase64, ·mlBits64)

	// The offset's extra bits: as many as its code.
	MOVQ 48(DI), R12
	MOVBLZX (R12)(BX*1), R12
	ANDL $31, R12
	MOVL 8(SI)(R13*4), DX
	LEAQ ·lowMask(SB), R14
	ANDL (R14)(R12*4), DX
	MOVQ R15, CX
	SHLQ CX, DX
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
