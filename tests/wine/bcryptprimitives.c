/*
 * bcryptprimitives.dll for Wine 8 (Debian 12's), which has none: Rust's standard library on
 * Windows takes its random bytes from bcryptprimitives!ProcessPrng, so without this DLL every
 * Rust program fails to load there (status c0000135). ProcessPrng is RtlGenRandom
 * (advapi32!SystemFunction036), a chunk at a time. scripts/windows-setup builds it with
 * mingw-w64 into the tests' Wine prefix; Windows itself has the real one.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
