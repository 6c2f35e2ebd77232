// QCustomPlot's header uses Qt's lower-case keywords (signals, slots, emit, foreach). nanscope
// builds with QT_NO_KEYWORDS because the engine has members named `slots`, so the keywords are
// defined for this one header and removed again.
#pragma once

#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
