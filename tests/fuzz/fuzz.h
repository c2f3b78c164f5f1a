/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - shared by the fuzz harnesses in tests/fuzz: the libFuzzer entry
 * point each defines, and the small fabric the ones that need a net load
 * (two switches, two hosts each, in ibnetdiscover format).
 */
#ifndef IBFAB_TESTS_FUZZ_H
#define IBFAB_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_BASE_TOPO \
	"Switch 4 \"S-1\" # \"sw1\" lid 1\n[1] \"H-1\"[1] # \"h1\" lid 2\n" \
	"[2] \"H-2\"[1] # \"h2\" lid 3\n[3] \"S-2\"[3]\n\n" \
	"Switch 4 \"S-2\" # \"sw2\" lid 4\n[1] \"H-3\"[1] # \"h3\" lid 5\n" \
	"[2] \"H-4\"[1] # \"h4\" lid 6\n[3] \"S-1\"[3]\n\n" \
	"Ca 1 \"H-1\" # \"h1\"\n[1] \"S-1\"[1] # lid 2\n\n" \
	"Ca 1 \"H-2\" # \"h2\"\n[1] \"S-1\"[2] # lid 3\n\n" \
	"Ca 1 \"H-3\" # \"h3\"\n[1] \"S-2\"[1] # lid 5\n\n" \
	"Ca 1 \"H-4\" # \"h4\"\n[1] \"S-2\"[2] # lid 6\n"

#endif
