-- A tiny fictitious consultancy, "Larkspire Engineering", used by `ragaudit doctor --example`
-- and the tests. Every name is invented. Rebuild example.sqlite with scripts/build_example_db.py.
CREATE TABLE Department (
    Name TEXT PRIMARY KEY,
    Floor INTEGER NOT NULL
);
CREATE TABLE Employee (
    EmployeeId INTEGER PRIMARY KEY,
    Name TEXT NOT NULL UNIQUE,
    JobTitle TEXT NOT NULL,
    Department TEXT NOT NULL REFERENCES Department(Name),
    Supervisor TEXT
);
CREATE TABLE Client (
    ClientId INTEGER PRIMARY KEY,
    Name TEXT NOT NULL UNIQUE,
    Industry TEXT NOT NULL,
    City TEXT NOT NULL
);
CREATE TABLE Project (
    ProjectId INTEGER PRIMARY KEY,
    Name TEXT NOT NULL UNIQUE,
    ClientId INTEGER NOT NULL REFERENCES Client(ClientId),
    ManagerId INTEGER NOT NULL REFERENCES Employee(EmployeeId),
    City TEXT NOT NULL,
    StartDate TEXT NOT NULL,
    EndDate TEXT,
    BudgetEur INTEGER
);
INSERT INTO Department VALUES ('Structures', 2), ('Hydraulics', 3), ('Surveying', 1), ('Management', 4);
INSERT INTO Employee VALUES
 (1, 'Ingrid Falkmoor', 'Managing Director', 'Management', NULL),
 (2, 'Tobias Wrenfield', 'Head of Structures', 'Structures', 'Ingrid Falkmoor'),
 (3, 'Mireille Oakhurst', 'Senior Structural Engineer', 'Structures', 'Tobias Wrenfield'),
 (4, 'Declan Ashgrove', 'Structural Engineer', 'Structures', 'Tobias Wrenfield'),
 (5, 'Priya Stonebrook', 'Head of Hydraulics', 'Hydraulics', 'Ingrid Falkmoor'),
 (6, 'Osric Pellham', 'Hydraulic Modeller', 'Hydraulics', 'Priya Stonebrook'),
 (7, 'Zoë Ng', 'Graduate Engineer', 'Hydraulics', 'Priya Stonebrook'),
 (8, 'Conall O''Brien', 'Chief Surveyor', 'Surveying', 'Ingrid Falkmoor'),
 (9, 'Hedda Morrow', 'Survey Technician', 'Surveying', 'Conall O''Brien'),
 (10, 'Rafferty Dunmore', 'Project Manager', 'Management', 'Ingrid Falkmoor'),
 (11, 'Saoirse Tallowby', 'Project Manager', 'Management', 'Ingrid Falkmoor');
INSERT INTO Client VALUES
 (1, 'Quillfeather Rail', 'Transport', 'Norbury Cross'),
 (2, 'Brackenwater Utilities', 'Water', 'Eastmere'),
 (3, 'Vantorre Housing Trust', 'Housing', 'Kellingford'),
 (4, 'Selbeck Ports Authority', 'Maritime', 'Selbeck'),
 (5, 'Orrin Valley Council', 'Local government', 'Orrin');
INSERT INTO Project VALUES
 (1, 'Norbury Viaduct Renewal', 1, 10, 'Norbury Cross', '2023-03-01', '2025-06-30', 4200000),
 (2, 'Eastmere Flood Defences', 2, 11, 'Eastmere', '2022-09-15', '2024-12-20', 7800000),
 (3, 'Kellingford Terraces', 3, 10, 'Kellingford', '2024-01-08', NULL, 2600000),
 (4, 'Selbeck Quay Extension', 4, 11, 'Selbeck', '2021-05-17', '2023-11-03', 12500000),
 (5, 'Orrin Footbridge', 5, 10, 'Orrin', '2024-06-03', NULL, NULL),
 (6, 'Brackenwater Reservoir Survey', 2, 8, 'Eastmere', '2023-10-02', '2024-02-29', 310000);
