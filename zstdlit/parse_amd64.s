//go:build amd64 && !purego

#include "textflag.h"

// parseAsm's fields.
#define A_SRC 0
#define A_TAB 8
#define A_LITS 16
#define A_SEQS 24
#define A_MUL 32
#define A_HL 40
#define A_TAGMASK 48
#define A_POSMASK 56
#define A_MASK 64
#define A_MASK8 72
#define A_MM 80
#define A_STRIDE 88
#define A_SS 96
#define A_END 104
#define A_LIMIT 112
#define A_MAXOFF 120
#define A_IP 128
#define A_ANCHOR 136
#define A_NL 144
#define A_NS 152
#define A_R0 160
#define A_R1 168
#define A_R2 176
#define A_LONG 184
#define A_HL2 192
#define A_PRIME 200
#define A_FILL 208
#define A_LLC 216
#define A_MLC 224
#define A_OFC 232
#define A_CNT 240
#define A_REPEND 248
#define A_SS2 256

// CANDIDATE takes the candidate of a table's entry (in a register, its
// position + 1 left there) for the position in R8 whose 8 bytes are in
// AX and whose tag is in tag: on to fail unless the tags agree and
// uint(ip-c-1) < uint(min(maxOff, ip)); else c in R12 and its 8 bytes
// xor AX in R10, the flags set by that xor. Clobbers R10, R12.
#define CANDIDATE(entry, tag, fail) \
	MOVQ entry, R12 \
	ANDQ A_TAGMASK(R14), R12 \
	CMPQ R12, tag \
	JNE  fail \
	ANDQ A_POSMASK(R14), entry \
	MOVQ R8, R10 \
	SUBQ entry, R10 \
	MOVQ A_MAXOFF(R14), R12 \
	CMPQ R12, R8 \
	CMOVQGT R8, R12 \
	CMPQ R10, R12 \
	JCC  fail \
	LEAQ -1(entry), R12 \
	MOVQ (SI)(R12*1), R10 \
	XORQ AX, R10

// LENCODE writes a length's code, from table below bound (the codes of
// the short lengths) or highBit(v) + base above it, to the field's slice
// at the sequence's index (R12) and counts it at cntoff(R15); high and
// done are its labels. Clobbers BX, DX.
#define LENCODE(v, bound, table, base, field, cntoff, high, done) \
	CMPQ v, $bound \
	JCC  high \
	LEAQ table(SB), DX \
	MOVBLZX (DX)(v*1), DX \
	JMP  done \
high: \
	BSRQ v, DX \
	ADDQ $base, DX \
done: \
	MOVQ field(R14), BX \
	MOVB DX, (BX)(R12*1) \
	INCL cntoff(R15)(DX*4)

// ENTER enters the position d bytes from p (e = d+1 its entry) into the
// table at tab, the hash's multiplier at mulf, its index shift in sh, as
// the loop's head does. Clobbers AX, BX, DX.
#define ENTER(p, d, e, mulf, tab, sh) \
	MOVQ d(SI)(p*1), BX \
	IMULQ mulf(R14), BX \
	SHRXQ sh, BX, DX \
	SHRQ $13, BX \
	ANDQ A_TAGMASK(R14), BX \
	LEAQ e(p), AX \
	ORQ  BX, AX \
	MOVL AX, (tab)(DX*4)

// MATCHLEN finishes matchLen: R13 is where the compare is, on the later
// start's side (p, a register), DX the frame less the offset, so that
// (DX)(R13*1) is the earlier side's byte. It leaves the common run's
// length from p in R10 and jumps to done; words, diff, bytes and end are
// its labels, one set for each use. Clobbers R13.
#define MATCHLEN(p, done, words, diff, bytes, end) \
words: \
	LEAQ 8(R13), R10 \
	CMPQ R10, A_END(R14) \
	JGT  bytes \
	MOVQ (SI)(R13*1), R10 \
	XORQ (DX)(R13*1), R10 \
	JNZ  diff \
	ADDQ $8, R13 \
	JMP  words \
diff: \
	BSFQ R10, R10 \
	SHRQ $3, R10 \
	ADDQ R13, R10 \
	SUBQ p, R10 \
	JMP  done \
bytes: \
	CMPQ R13, A_END(R14) \
	JGE  end \
	MOVBLZX (SI)(R13*1), R10 \
	CMPB R10, (DX)(R13*1) \
	JNE  end \
	INCQ R13 \
	JMP  bytes \
end: \
	MOVQ R13, R10 \
	SUBQ p, R10 \
	JMP  done

// func parseAMD64(a *parseAsm)
//
// parseWindow's loop, step for step: the long table asked where it has
// one (A_LONG not nil), the match's inside entered with Fill (A_FILL).
// Besides, each sequence's three codes are written and counted, which
// parseWindow leaves to the sequences section.
//
// Needs BMI2 (parse asks): every variable shift is SHRX, one µop where
// SHR by CL takes two or three on Intel cores, and its count in any
// register, so CX keeps the hash's shift throughout.
//
// Registers: R14 the argument block, SI the frame, DI the table, R8 the
// position (ip), R9 the anchor, R11 the last offset (r0), CX the hash's
// shift (64 - HashLog); at a position AX its 8 bytes, BX their tag, R15
// the table's entry; DX R10 R12 R13 scratch.
TEXT ·parseAMD64(SB), NOSPLIT, $0-8
	MOVQ a+0(FP), R14
	MOVQ A_SRC(R14), SI
	MOVQ A_TAB(R14), DI
	MOVQ A_IP(R14), R8
	MOVQ R8, R9
	MOVQ A_R0(R14), R11
	MOVQ A_HL(R14), CX

	// The loop and the step on a miss start on 32-byte lines: a
	// block inserted above moved them and cost saturated 8-bit
	// frames, all steps and few matches, 12%.
	PCALIGN $32

loop:
	CMPQ R8, A_LIMIT(R14)
	JGE  done
	MOVQ (SI)(R8*1), AX       // cur
	MOVQ AX, BX
	IMULQ A_MUL(R14), BX      // the hash
	SHRXQ CX, BX, DX          // its table index
	SHRQ $13, BX
	ANDQ A_TAGMASK(R14), BX   // its tag
	MOVL (DI)(DX*4), R15      // the entry
	LEAQ 1(R8), R10
	ORQ  BX, R10
	MOVL R10, (DI)(DX*4)      // the position replaces it

	// The last offset one byte on: ip < repEnd, ip > anchor, ip+1-r0 >=
	// 0 and the MinMatch-1 bytes after cur's first agree.
	CMPQ R8, A_REPEND(R14)
	JGE  cand
	CMPQ R8, R9
	JLE  cand
	LEAQ 1(R8), DX
	SUBQ R11, DX
	JLT  cand
	MOVQ (SI)(DX*1), R10
	MOVQ AX, R12
	SHRQ $8, R12
	XORQ R12, R10
	ANDQ A_MASK8(R14), R10
	JNZ  cand
	// matchLen(src, ip+1-r0, ip+1, end) in R10: R12 the later start, R13
	// where the compare is, DX the frame less the offset.
	LEAQ 1(R8), R12
	ADDQ SI, DX
	SUBQ R12, DX
	MOVQ R12, R13

	MATCHLEN(R12, rlen, rwords, rdiff, rbytes, rend)

rlen:
	CMPQ R10, A_MM(R14)
	JLT  cand                 // too short: the table's candidate instead
	MOVQ A_END(R14), DX
	MOVQ DX, A_REPEND(R14)    // found one: tried to the block's end
	INCQ R8
	MOVQ R8, R12
	SUBQ R11, R12             // c
	JMP  match

cand:
	CMPQ A_LONG(R14), $0
	JNE  long

short:
	// The entry's candidate c = (t & posMask) - 1 is taken when its tag
	// agrees, uint(ip-c-1) < uint(min(maxOff, ip)) and its MinMatch bytes
	// agree.
	CANDIDATE(R15, BX, miss)
	TESTQ A_MASK(R14), R10
	JNZ  miss

found:
	// A match: the next position is ip plus its length, at least
	// MinMatch, mostly MinMatch or one more. Their table entries are
	// asked for now, while the candidate's bytes are on their way: a
	// match's table load otherwise waits on its length.
	MOVQ R8, DX
	ADDQ A_MM(R14), DX
	CMPQ DX, A_LIMIT(R14)
	JGE  measure
	MOVQ (SI)(DX*1), R13
	IMULQ A_MUL(R14), R13
	SHRXQ CX, R13, R13
	PREFETCHT0 (DI)(R13*4)
	MOVQ 1(SI)(DX*1), R13
	IMULQ A_MUL(R14), R13
	SHRXQ CX, R13, R13
	PREFETCHT0 (DI)(R13*4)

measure:
	// matchLen(src, c, ip, end) in R10; its first word is in R10 already
	// (ip < limit, so 8 bytes are there). DX the frame less the offset.
	TESTQ R10, R10
	JNZ  cfirst
	MOVQ SI, DX
	ADDQ R12, DX
	SUBQ R8, DX
	LEAQ 8(R8), R13

	MATCHLEN(R8, back, cwords, cdiff, cbytes, cend)

cfirst:
	BSFQ R10, R10
	SHRQ $3, R10

back:
	// Backwards over the literals while the bytes before agree.
	CMPQ R8, R9
	JLE  match
	TESTQ R12, R12
	JLE  match
	MOVBLZX -1(SI)(R8*1), DX
	CMPB DX, -1(SI)(R12*1)
	JNE  match
	DECQ R8
	DECQ R12
	INCQ R10
	JMP  back

long:
	// The long table's entry for cur's 8 bytes (hashTag with no shift,
	// the table's own index bits) is asked first and replaced; its
	// candidate is taken when its tag agrees, it lies in the window and
	// all 8 bytes agree, else the short table's is asked.
	MOVQ AX, R10
	IMULQ A_PRIME(R14), R10
	MOVQ A_HL2(R14), DX
	SHRXQ DX, R10, R12        // its index
	SHRQ $13, R10
	ANDQ A_TAGMASK(R14), R10  // its tag
	MOVQ A_LONG(R14), DX
	LEAQ (DX)(R12*4), DX
	MOVL (DX), R13            // its entry
	LEAQ 1(R8), R12
	ORQ  R10, R12
	MOVL R12, (DX)
	CANDIDATE(R13, R10, short)
	JNZ  short                // all 8 bytes agree, or the short table's
	JMP  found

	PCALIGN $32

miss:
	// ip += stride + (ip-anchor)>>ss + (ip-anchor)>>ss2
	MOVQ R8, DX
	SUBQ R9, DX
	MOVQ A_SS(R14), R10
	SHRXQ R10, DX, R10
	MOVQ A_SS2(R14), R12
	SHRXQ R12, DX, DX
	ADDQ R10, DX
	ADDQ A_STRIDE(R14), DX
	ADDQ DX, R8
	JMP  loop

match:
	// A match at ip of R10 bytes from c (R12). Its literals,
	// src[anchor:ip], to lits[nl:], a word at a time (the frame has 8
	// bytes past ip, the literals 8 past the block).
	MOVQ R8, R13
	SUBQ R9, R13              // ll
	MOVQ A_NL(R14), DX
	ADDQ A_LITS(R14), DX
	MOVQ R9, AX

lits:
	MOVQ (SI)(AX*1), R15
	MOVQ R15, (DX)
	ADDQ $8, AX
	ADDQ $8, DX
	CMPQ AX, R8
	JLT  lits
	ADDQ R13, A_NL(R14)

	// The offset's code (repCode's cases in its order), AX; BX the offset.
	MOVQ R8, BX
	SUBQ R12, BX
	LEAQ 3(BX), AX
	TESTQ R13, R13
	JZ   notr0
	CMPQ BX, R11
	JNE  notr0
	MOVL $1, AX
	JMP  coded

notr0:
	CMPQ BX, A_R1(R14)
	JNE  notr1
	MOVL $2, AX
	TESTQ R13, R13
	JNZ  swap
	MOVL $1, AX

swap:
	MOVQ R11, A_R1(R14)
	MOVQ BX, R11
	JMP  coded

notr1:
	CMPQ BX, A_R2(R14)
	JNE  notr2
	MOVL $3, AX
	TESTQ R13, R13
	JNZ  roll
	MOVL $2, AX
	JMP  roll

notr2:
	TESTQ R13, R13
	JNZ  roll
	LEAQ -1(R11), DX
	CMPQ BX, DX
	JNE  roll
	MOVL $3, AX

roll:
	MOVQ A_R1(R14), DX
	MOVQ DX, A_R2(R14)
	MOVQ R11, A_R1(R14)
	MOVQ BX, R11

coded:
	MOVQ A_NS(R14), R12
	LEAQ (R12)(R12*2), DX
	MOVQ A_SEQS(R14), R15
	MOVL R13, (R15)(DX*4)
	MOVL R10, 4(R15)(DX*4)
	MOVL AX, 8(R15)(DX*4)

	// Its codes, counted: the offset's, highBit(offVal);
	MOVQ A_CNT(R14), R15
	BSRL AX, DX
	MOVQ A_OFC(R14), BX
	MOVB DX, (BX)(R12*1)
	INCL 512(R15)(DX*4)
	// the literal length's, from llCodeOf below 64; the match length's,
	// from mlCodeOf below 128+3.
	LENCODE(R13, 64, ·llCodeOf, 19, A_LLC, 0, llhigh, llcode)
	LEAQ -3(R10), BX
	LENCODE(BX, 128, ·mlCodeOf, 36, A_MLC, 256, mlhigh, mlcode)
	INCQ A_NS(R14)
	ADDQ R10, R8
	MOVQ R8, R9

	// With Fill every other position inside the match from its third
	// byte on, then the one two bytes before its end, into the tables.
	CMPQ R8, A_LIMIT(R14)
	JGE  done
	CMPQ A_FILL(R14), $0
	JEQ  filled
	MOVQ R8, R12
	SUBQ R10, R12
	ADDQ $2, R12
	LEAQ -2(R8), R13

fill:
	CMPQ R12, R13
	JGE  filled
	ENTER(R12, 0, 1, A_MUL, DI, CX)
	MOVQ A_LONG(R14), R15
	TESTQ R15, R15
	JZ   fillnext
	MOVQ A_HL2(R14), R10
	ENTER(R12, 0, 1, A_PRIME, R15, R10)

fillnext:
	ADDQ $2, R12
	JMP  fill

filled:
	ENTER(R8, -2, -1, A_MUL, DI, CX)
	MOVQ A_LONG(R14), R15
	TESTQ R15, R15
	JZ   loop
	MOVQ A_HL2(R14), R10
	ENTER(R8, -2, -1, A_PRIME, R15, R10)
	JMP  loop

done:
	MOVQ R8, A_IP(R14)
	MOVQ R9, A_ANCHOR(R14)
	MOVQ R11, A_R0(R14)
	RET
