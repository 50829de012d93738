"""`ironlaw sweep SPEC --on HW1,HW2 --batch 1,2,4,…,1024`: placeholder while sweep is written."""
