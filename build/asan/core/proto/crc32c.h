/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
 * Kafka record batches v2.
 *
 * crc32c() takes the running value and does the pre/post inversion itself,
 * so chunks chain: crc32c(crc32c(0, a, na), b, nb) == crc32c(0, a||b, na+nb)
 * and crc32c(0, "123456789", 9) == 0xE3069283.
 *
 * On x86-64 with SSE4.2 (checked once at run time) the CRC32 instruction
 * is used; elsewhere a portable slice-by-8 table. Thread-safe; no state
 * besides the tables built once on first use. */
#ifndef SAMSA_PROTO_CRC32C_H
#define SAMSA_PROTO_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *p, size_t n);

/* The two implementations, exposed so tests can compare them. crc32c_hw
 * must only be called when crc32c_hw_available() is true. */
uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n);
uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n);
bool crc32c_hw_available(void);

#endif
