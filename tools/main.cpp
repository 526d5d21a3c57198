// tools/main.cpp — being written
