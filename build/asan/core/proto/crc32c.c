#include "proto/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CRC32C_X86 1
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u /* reflected 0x1EDC6F41 */

/* tab[0] is the classic byte table; tab[k][b] is the CRC of byte b
 * followed by k zero bytes, which lets slice-by-8 fold 8 bytes per step. */
static uint32_t tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;
static bool have_hw;

static void crc32c_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
        tab[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++)
            tab[k][b] = (tab[k - 1][b] >> 8) ^ tab[0][tab[k - 1][b] & 0xff];
#ifdef CRC32C_X86
    __builtin_cpu_init();
    have_hw = __builtin_cpu_supports("sse4.2");
#endif
}

/* Byte loads assembled explicitly so the table path is endian-neutral. */
static inline uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t sw_update(uint32_t c, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = load_le32(p) ^ c;
        uint32_t hi = load_le32(p + 4);
        c = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^ tab[5][(lo >> 16) & 0xff] ^ tab[4][lo >> 24] ^
            tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^ tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ tab[0][(c ^ *p++) & 0xff];
    return c;
}

uint32_t crc32c_sw(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&tab_once, crc32c_init);
    return ~sw_update(~crc, p, n);
}

#ifdef CRC32C_X86
/* Only this function is compiled for SSE4.2, so the rest of the build runs
 * on any x86-64; it is reached only after the CPU check. */
__attribute__((target("sse4.2")))
static uint32_t hw_update(uint32_t c, const uint8_t *p, size_t n)
{
    uint64_t c64 = c;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8); /* unaligned-safe; x86 is little-endian as CRC32 expects */
        c64 = _mm_crc32_u64(c64, w);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
        c = _mm_crc32_u8(c, *p++);
    return c;
}
#endif

bool crc32c_hw_available(void)
{
    pthread_once(&tab_once, crc32c_init);
    return have_hw;
}

uint32_t crc32c_hw(uint32_t crc, const void *p, size_t n)
{
#ifdef CRC32C_X86
    if (crc32c_hw_available())
        return ~hw_update(~crc, p, n);
#endif
    return crc32c_sw(crc, p, n);
}

uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
    pthread_once(&tab_once, crc32c_init);
#ifdef CRC32C_X86
    if (have_hw)
        return ~hw_update(~crc, p, n);
#endif
    return ~sw_update(~crc, p, n);
}
