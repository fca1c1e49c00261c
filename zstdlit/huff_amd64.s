//go:build amd64 && !purego

#include "textflag.h"

// CODE adds the code of the literal at off(SI)(BX*1) to the accumulator
// (AX) at the bit count (CX) and counts its bits; the shift is BMI2's
// SHLX, one µop where SHL by CL takes two or three on Intel cores.
// Clobbers DX, R11.
#define CODE(off) \
	MOVBLZX off(SI)(BX*1), DX \
	MOVQ (R9)(DX*8), R11 \
	SHLXQ CX, R11, R11 \
	ORQ R11, AX \
	MOVBLZX (R10)(DX*1), R11 \
	ADDQ R11, CX

// func encodeLitsAMD64(a *huffAsm)
//
// Needs BMI2 (codeLits asks). Registers: AX the accumulator, CX its bit count, R8 where the next word
// goes, SI the literals, BX how many are left, R9 and R10 the code and
// length tables; DX, R11 scratch.
TEXT ·encodeLitsAMD64(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), DI
	MOVQ 0(DI), R8
	XORQ AX, AX
	XORQ CX, CX
	MOVQ 24(DI), SI
	MOVQ 32(DI), BX
	MOVQ 40(DI), R9
	MOVQ 48(DI), R10
	CMPQ BX, $5
	JLT done

loop:
	CODE(-1)
	CODE(-2)
	CODE(-3)
	CODE(-4)
	CODE(-5)
	// Write the word, move on by its whole bytes, keep the rest.
	MOVQ AX, (R8)
	MOVQ CX, DX
	SHRQ $3, DX
	ADDQ DX, R8
	SHLQ $3, DX
	SHRXQ DX, AX, AX
	ANDQ $7, CX
	SUBQ $5, BX
	CMPQ BX, $5
	JGE loop

done:
	MOVQ R8, DX
	SUBQ 0(DI), DX
	MOVQ DX, 56(DI)
	MOVQ AX, 8(DI)
	MOVQ CX, 16(DI)
	MOVQ BX, 32(DI)
	RET
