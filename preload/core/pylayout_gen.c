/* pylayout_gen.c — prints one row of preload/pylayouts.h: where the frame chain and the
 * code objects of a CPython version keep what pyframes.c reads, taken from that version's
 * own headers. Built and run once per installed interpreter by scripts/pylayouts (which
 * writes the table) and by tests/scenario/test_pyframes.py (which checks it):
 *   cc -I$(python3.X include dir) -I.../internal pylayout_gen.c && ./a.out
 * Never linked into the preload. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif

/* The bit of PyASCIIObject.state that a bit field starts at, found by setting it. */
#define STATE_BIT(field)                                                                          \
    ({                                                                                            \
        PyASCIIObject o;                                                                          \
        memset(&o, 0, sizeof(o));                                                                 \
        o.state.field = 1;                                                                        \
        unsigned w;                                                                               \
        memcpy(&w, &o.state, sizeof(w));                                                          \
        __builtin_ctz(w);                                                                         \
    })

int main(void)
{
    printf("    { %d, %d, ", PY_MAJOR_VERSION, PY_MINOR_VERSION);
#if PY_VERSION_HEX >= 0x030D0000
    printf("ANA_PYF_DIRECT, ANA_PYL_PTR, %zu, 0, ", offsetof(PyThreadState, current_frame));
    printf("%zu, %zu, %zu, %zu, 0xffff, %d, %d, ", offsetof(_PyInterpreterFrame, previous),
           offsetof(_PyInterpreterFrame, f_executable), offsetof(_PyInterpreterFrame, instr_ptr),
           offsetof(_PyInterpreterFrame, owner), FRAME_OWNED_BY_GENERATOR, FRAME_OWNED_BY_CSTACK);
#elif PY_VERSION_HEX >= 0x030B0000
    printf("ANA_PYF_CFRAME, ANA_PYL_PTR, %zu, %zu, ", offsetof(PyThreadState, cframe),
           offsetof(_PyCFrame, current_frame));
#if PY_VERSION_HEX >= 0x030C0000
    printf("%zu, %zu, %zu, %zu, 0xffff, %d, %d, ", offsetof(_PyInterpreterFrame, previous),
           offsetof(_PyInterpreterFrame, f_code), offsetof(_PyInterpreterFrame, prev_instr),
           offsetof(_PyInterpreterFrame, owner), FRAME_OWNED_BY_GENERATOR, FRAME_OWNED_BY_CSTACK);
#else
    printf("%zu, %zu, %zu, %zu, %zu, %d, -1, ", offsetof(_PyInterpreterFrame, previous),
           offsetof(_PyInterpreterFrame, f_code), offsetof(_PyInterpreterFrame, prev_instr),
           offsetof(_PyInterpreterFrame, owner), offsetof(_PyInterpreterFrame, is_entry),
           FRAME_OWNED_BY_GENERATOR);
#endif
#else
    printf("ANA_PYF_FRAMEOBJ, %s, %zu, 0, ", PY_VERSION_HEX >= 0x030A0000 ? "ANA_PYL_UNITS" : "ANA_PYL_BYTES",
           offsetof(PyThreadState, frame));
    printf("%zu, %zu, %zu, 0xffff, 0xffff, -1, -1, ", offsetof(PyFrameObject, f_back),
           offsetof(PyFrameObject, f_code), offsetof(PyFrameObject, f_lasti));
#endif
#if PY_VERSION_HEX >= 0x030B0000
    printf("%zu, %zu, ", offsetof(PyCodeObject, co_name), offsetof(PyCodeObject, co_qualname));
#else
    printf("%zu, 0xffff, ", offsetof(PyCodeObject, co_name));
#endif
    printf("%zu, %zu, ", offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
    printf("%zu, ", offsetof(PyCodeObject, co_linetable));
#else
    printf("%zu, ", offsetof(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030B0000
    printf("%zu, %zu, ", offsetof(PyCodeObject, co_code_adaptive), offsetof(PyCodeObject, _co_firsttraceable));
#else
    printf("0xffff, 0xffff, ");
#endif
    printf("%zu, %zu, ", offsetof(PyVarObject, ob_size), offsetof(PyBytesObject, ob_sval));
    printf("%zu, %zu, %zu, %zu, %d, %d, %d },\n", offsetof(PyASCIIObject, length), offsetof(PyASCIIObject, state),
           sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject), STATE_BIT(kind), STATE_BIT(compact),
           STATE_BIT(ascii));
    return 0;
}
