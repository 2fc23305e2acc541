-- Foreign keys: the referenced side is checked when the key is declared.
CREATE TABLE fk_p (id int PRIMARY KEY, code text, a int, b int, UNIQUE (a, b));
CREATE UNIQUE INDEX fk_p_code ON fk_p (code);
CREATE TABLE fk_c1 (id int PRIMARY KEY, p int REFERENCES fk_p);
CREATE TABLE fk_c2 (id int PRIMARY KEY, c text REFERENCES fk_p (code));
CREATE TABLE fk_c3 (id int PRIMARY KEY, x int, y int, FOREIGN KEY (x, y) REFERENCES fk_p (b, a));
CREATE TABLE fk_c4 (id int PRIMARY KEY, a int REFERENCES fk_p (a));
CREATE TABLE fk_c5 (id int PRIMARY KEY, p int REFERENCES nope (id));
CREATE TABLE fk_c6 (id int PRIMARY KEY, p int REFERENCES fk_p (nocol));
CREATE TABLE fk_c7 (id int PRIMARY KEY, parent int REFERENCES fk_c7 (id));
CREATE TABLE fk_c8 (id int PRIMARY KEY, p int);
ALTER TABLE fk_c8 ADD CONSTRAINT fk_c8_p FOREIGN KEY (p) REFERENCES fk_p (b);
ALTER TABLE fk_c8 ADD CONSTRAINT fk_c8_p2 FOREIGN KEY (p) REFERENCES fk_p (id);
INSERT INTO fk_p VALUES (1, 'x', 1, 2);
INSERT INTO fk_c2 VALUES (1, 'x');
INSERT INTO fk_c3 VALUES (1, 2, 1);
INSERT INTO fk_c3 VALUES (2, 9, 9);
SELECT count(*) FROM fk_c3;
