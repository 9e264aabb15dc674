# The first attacker's client (env.py) and word tables (lex.py) live in ../redteam-helper/.
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "redteam-helper"))
